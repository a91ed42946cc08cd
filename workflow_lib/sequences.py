"""Which test sequences also occur in the training set (the test loss is then in-sample), how
many distinct sequences a data set holds, and where it first holds two sequences one spin apart.

Rows are compared as byte strings of int32 colours, so arrays of any integer dtype compare by
value."""

from __future__ import annotations

import numpy as np


def in_training_set(train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """``(M_test,)`` bool: row ``k`` of ``test: (M_test, L)`` equals some row of ``train: (M, L)``.

    Rows are compared as whole byte strings (same dtype for both), so the cost is
    ``O((M + M_test) L)`` with a hash set.
    """
    train = np.ascontiguousarray(train, np.int32)
    test = np.ascontiguousarray(test, np.int32)
    seen = {row.tobytes() for row in train}
    return np.fromiter((row.tobytes() in seen for row in test), bool, len(test))


def n_distinct(seqs: np.ndarray) -> int:
    """The number of distinct rows of ``seqs: (M, L)`` (compared as ``in_training_set`` does)."""
    return len({row.tobytes() for row in np.ascontiguousarray(seqs, np.int32)})


def first_near_duplicate(seqs: np.ndarray, chunk: int = 256) -> int | None:
    """The smallest ``M`` such that the first ``M`` rows of ``seqs: (N, L)`` hold two rows at
    Hamming distance 1 (distinct, one spin apart), or ``None`` when no two rows are.

    Two such sequences cannot both have every site predicted correctly by a fit of the
    conditionals (at the differing site the rest is the same, the tokens differ), so the training
    data stop being separable at that ``M``. Rows are compared in chunks of ``chunk`` against
    all earlier rows: ``O(N^2 L / 2)`` comparisons, ``chunk x N x L`` booleans in memory.
    """
    seqs = np.asarray(seqs)
    n = len(seqs)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        distance = (seqs[start:stop, None, :] != seqs[None, :stop, :]).sum(axis=-1)
        earlier = np.arange(stop)[None, :] < np.arange(start, stop)[:, None]
        hit = ((distance == 1) & earlier).any(axis=1)
        if hit.any():
            return start + int(np.argmax(hit)) + 1
    return None

