"""Which test sequences also occur in the training set (the test loss is then in-sample)."""

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
