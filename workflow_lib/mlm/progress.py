"""Progress lines of a training run, written by the host between its compiled chunks of epochs
(``loop.Run``)."""

from __future__ import annotations

import logging
import time

import numpy as np


class Progress:
    """Progress of one run at a time: ``start`` before the run, then one call per logged epoch. A
    line holds the epoch, the training and test loss of the restart with the lowest training
    loss and the optimal loss (each the mean over the problems a program trains side by side,
    with their number when more than one) and the optimiser steps per second since the previous
    line (every problem and restart takes one step at a time)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.epochs = self.steps = self.epoch = 0
        self.time = 0.0

    def start(self, epochs: int, steps: int) -> None:
        """A run of ``epochs`` epochs of ``steps`` optimiser steps each starts now."""
        self.epochs, self.steps, self.epoch, self.time = epochs, steps, 0, time.perf_counter()

    def resumed(self, epochs: int) -> None:
        """The run resumes from a checkpoint after ``epochs`` epochs."""
        self.logger.info("resumed at epoch %d of %d", epochs, self.epochs)
        self.epoch, self.time = epochs, time.perf_counter()

    def __call__(self, e: int, metrics: dict[str, np.ndarray], optimum: np.ndarray) -> None:
        """Epoch ``e`` (0-based) is done; ``metrics``: ``train_loss`` and ``test_loss``, ``(K,
        R)`` over problems and restarts; ``optimum: (K,)``."""
        now = time.perf_counter()
        train, test = np.asarray(metrics["train_loss"]), np.asarray(metrics["test_loss"])
        best = np.argmin(train, axis=1)[:, None]
        train, test = (np.take_along_axis(x, best, axis=1).mean() for x in (train, test))
        rate = (e + 1 - self.epoch) * self.steps / max(now - self.time, 1e-9)
        self.epoch, self.time = e + 1, now
        K = len(best)
        self.logger.info(
            "epoch %d/%d  train %.4f  test %.4f  (optimal %.4f)%s  %.0f steps/s",
            e + 1, self.epochs, train, test, np.mean(optimum),
            f"  mean of {K} realisations" if K > 1 else "", rate,
        )  # fmt: skip
