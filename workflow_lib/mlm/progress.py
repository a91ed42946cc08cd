"""Progress lines of a training run, written from the device through ``jax.debug.callback``."""

from __future__ import annotations

import logging
import time

import jax
import numpy as np


class Progress:
    """Host-side progress of one run at a time: ``start`` before the run, then one call per
    logged epoch from the device program. A line holds the epoch, the training and test loss of
    the restart with the lowest training loss, the optimal loss and the optimiser steps per
    second since the previous line."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.epochs = self.steps = self.epoch = 0
        self.time = 0.0

    def start(self, epochs: int, steps: int) -> None:
        """A run of ``epochs`` epochs of ``steps`` optimiser steps each starts now."""
        self.epochs, self.steps, self.epoch, self.time = epochs, steps, 0, time.perf_counter()

    def __call__(self, e: jax.Array, metrics: dict[str, jax.Array], optimum: jax.Array) -> None:
        """Epoch ``e`` (0-based) is done; ``metrics``: ``train_loss`` and ``test_loss``, ``(R,)``
        over restarts."""
        now, e, m = time.perf_counter(), int(e), jax.device_get(metrics)  # numpy: no programs
        best = int(np.argmin(m["train_loss"]))
        rate = (e + 1 - self.epoch) * self.steps / max(now - self.time, 1e-9)
        self.epoch, self.time = e + 1, now
        self.logger.info(
            "epoch %d/%d  train %.4f  test %.4f  (optimal %.4f)  %.0f steps/s",
            e + 1, self.epochs, m["train_loss"][best], m["test_loss"][best], optimum, rate,
        )  # fmt: skip
