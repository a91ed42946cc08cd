"""The static plan of a masked-language-model training run: epochs, steps, batches, restarts,
penalty, the epochs that are evaluated and logged, and the stop criterion, from the run's
``TrainingOptions``."""

from __future__ import annotations

import math
from typing import NamedTuple

from workflow_lib.mlm.models import ArchSpec
from workflow_lib.mlm.options import TrainingOptions


class Plan(NamedTuple):
    """Static sizes of a run (hashable: a ``jit`` static argument)."""

    epochs: int
    steps: int  # per epoch
    all_sites: bool  # transformers: every (sequence, site) pair once per epoch
    batch: int
    restarts: int
    l2: float
    eval_every: int
    log_every: int
    stop_window: int = 0  # epochs; 0: every one of ``epochs`` runs (``metrics.STOP``)
    stop_tol: float = 0.0
    sites: int = 1  # masked sites per batch unit: L for the factored family, else 1
    stop_decays: int = 0  # learning-rate decays on a plateau before a stop (``loop.Stop``)
    stop_decay: float = 0.1  # the factor of each

    @property
    def supervised_per_epoch(self) -> int:
        """The supervised (sequence, site) pairs of an epoch: ``steps * batch`` sequences with
        every one of ``L`` sites masked (the factored family), one masked site each
        (transformers, ``vanilla_sites: one``) or ``steps * batch`` pairs (``all``)."""
        return self.steps * self.batch * self.sites


def make_plan(spec: ArchSpec, options: TrainingOptions, n_train: int) -> Plan:
    """The plan of training ``spec`` on ``n_train`` sequences with ``options`` (its
    ``epochs``, ``eval_every``, ``restarts``, ``vanilla_sites``, ``batch_size``, ``l2`` and stop
    criterion): mini-batches of ``batch_size`` sequences (transformers with
    ``vanilla_sites: all``: of (sequence, site) pairs), the remainder of an epoch dropped; about
    ten progress lines per run, on evaluated epochs. With a stop window (``stop_window`` > 0,
    ``metrics.STOP``) ``epochs`` is the cap and the compiled chunks, at
    whose ends the criterion is read, are a quarter of the window (rounded up to evaluations)."""
    o = options
    epochs, eval_every, restarts = int(o.epochs), int(o.eval_every), int(o.restarts)
    if min(epochs, eval_every, restarts) < 1:
        raise ValueError("epochs, eval_every and restarts must be >= 1")
    all_sites = spec.kind == "transformer" and o.vanilla_sites == "all"
    units = n_train * spec.L if all_sites else n_train  # supervised units per epoch
    batch = min(int(o.batch_size), units)
    window = int(o.stop_window)
    log_every = eval_every * max(1, math.ceil(window / (4 * eval_every)) if window
                                 else math.ceil(epochs / (10 * eval_every)))
    sites = spec.L if spec.kind != "transformer" else 1
    return Plan(epochs, units // batch, all_sites, batch, restarts, float(o.l2), eval_every,
                log_every, window, float(o.stop_tol), sites, int(o.stop_decays),
                float(o.stop_decay))
