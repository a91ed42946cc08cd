"""Held-out and validation splits of an alignment.

A fraction of the sequences is held out at random (``alignment.split_held_out``) for the
masked-token test loss the claims compare; held-out sequences at the reweighting identity or
above to some training sequence are then dropped from the held-out set (they would be recalled,
not predicted). A fraction of the remaining training sequences is carved out the same way as a
validation set, the one on which the study makes its choices (the heads of factored attention,
the transformers' stop): validation sequences at the identity or above to a fitted sequence are
dropped too. The models are fitted on the rest, the fitted rows. Weights are computed within
each part: fitted sequences among the fitted ones (what plmDCA on the fitted alignment uses),
validation sequences among the kept validation ones, held-out sequences among the kept held-out
ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workflow_lib.proteins.alignment import split_held_out
from workflow_lib.proteins.weights import neighbour_counts, sequence_weights


@dataclass(frozen=True)
class Split:
    """``train``, ``validation``, ``test``: ``(M,)`` bool rows, pairwise disjoint (``train``:
    the fitted rows; rows in none were carved out and dropped); ``weights: (M,)`` each row's
    weight within its part, 0 on dropped rows; ``dropped``, ``validation_dropped``: held-out and
    validation rows dropped."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    weights: np.ndarray
    dropped: int
    validation_dropped: int


def _carve(seqs: np.ndarray, rows: np.ndarray, fraction: float, identity: float,
           seed: int) -> tuple[np.ndarray, np.ndarray, int]:  # fmt: skip
    """Carve about ``fraction`` of ``rows`` (indices into ``seqs: (M, L)``) out at random
    (``seed``): ``(kept rows, carved rows without a kept row within identity, carved rows
    dropped)``, the index arrays sorted."""
    keep, out = split_held_out(len(rows), fraction, seed)
    keep, out = rows[keep], rows[out]
    far = out[neighbour_counts(seqs[out], seqs[keep], identity) == 0]
    return keep, far, int(out.size - far.size)


def held_out_split(seqs: np.ndarray, fraction: float, identity: float, seed: int,
                   validation: float, validation_seed: int) -> Split:  # fmt: skip
    """The split of ``seqs: (M, L)``: about ``fraction * M`` rows held out (``seed``), held-out
    rows within ``identity`` of a training row dropped; of the training rows, about
    ``validation`` of them carved out (``validation_seed``), those within ``identity`` of a
    fitted row dropped; weights at ``identity`` within each part."""
    M = seqs.shape[0]
    training, test, dropped = _carve(seqs, np.arange(M), fraction, identity, seed)
    fitted, valid, validation_dropped = _carve(seqs, training, validation, identity,
                                               validation_seed)  # fmt: skip
    masks, weights = [], np.zeros(M)
    for rows in (fitted, valid, test):
        mask = np.zeros(M, bool)
        mask[rows] = True
        masks.append(mask)
        if rows.size:
            weights[rows] = sequence_weights(seqs[rows], identity)
    return Split(*masks, weights, dropped, validation_dropped)
