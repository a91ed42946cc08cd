"""Which test sequences also occur in the training set (the test loss is then in-sample), how
many distinct sequences a data set holds, and how many masked tokens its conflicts force wrong.

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


def forced_errors(seqs: np.ndarray) -> int:
    """The number of (sequence, site) pairs of ``seqs: (M, L)`` that every classifier of a
    masked token from the rest of its sequence gets wrong: at each site the sequences that agree
    everywhere else (one context) but carry different tokens there conflict, and of a context's
    ``n`` tokens at most the most frequent one's count can be right. A fit separates its
    training data as well as the data allow when its training errors equal this count.
    ``O(L M log M)``: one sort of the contexts per site."""
    seqs = np.ascontiguousarray(seqs, np.int32)
    forced = 0
    for i in range(seqs.shape[1]):
        context = seqs.copy()
        context[:, i] = -1
        _, ctx = np.unique(context, axis=0, return_inverse=True)
        pairs, count = np.unique(np.stack([ctx.ravel(), seqs[:, i]], 1), axis=0,
                                 return_counts=True)
        best = np.zeros(int(ctx.max()) + 1 if len(ctx) else 0, np.int64)
        np.maximum.at(best, pairs[:, 0], count)
        forced += len(seqs) - int(best.sum())
    return forced
