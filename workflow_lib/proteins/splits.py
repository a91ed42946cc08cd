"""Held-out splits of an alignment for the masked-token test loss.

A fraction of the sequences is held out at random (``alignment.split_held_out``); held-out
sequences at the reweighting identity or above to some training sequence are then dropped from
the held-out set (they would be recalled, not predicted), and the weights are computed within
each part: training sequences among the training sequences (what plmDCA on the training
alignment uses), held-out sequences among the kept held-out ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workflow_lib.proteins.alignment import split_held_out
from workflow_lib.proteins.weights import neighbour_counts, sequence_weights


@dataclass(frozen=True)
class Split:
    """``train``, ``test``: ``(M,)`` bool rows (disjoint; rows in neither were held out and
    dropped); ``weights: (M,)`` the training weights on training rows, the held-out weights on
    held-out rows, 0 elsewhere; ``dropped``: held-out rows dropped."""

    train: np.ndarray
    test: np.ndarray
    weights: np.ndarray
    dropped: int


def held_out_split(seqs: np.ndarray, fraction: float, identity: float, seed: int) -> Split:
    """The split of ``seqs: (M, L)`` with about ``fraction * M`` rows held out (``seed``), held-out
    rows within ``identity`` of a training row dropped, weights at ``identity`` per part."""
    M = seqs.shape[0]
    train = np.zeros(M, bool)
    train[split_held_out(M, fraction, seed)[0]] = True
    held = np.flatnonzero(~train)
    kept = held[neighbour_counts(seqs[held], seqs[train], identity) == 0]
    test = np.zeros(M, bool)
    test[kept] = True
    weights = np.zeros(M)
    weights[train] = sequence_weights(seqs[train], identity)
    if kept.size:
        weights[test] = sequence_weights(seqs[test], identity)
    return Split(train, test, weights, int(held.size - kept.size))
