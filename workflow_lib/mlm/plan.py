"""The static plan of a masked-language-model training run: epochs, steps, batches, restarts,
penalty and the epochs that are evaluated and logged, from the ``training`` config."""

from __future__ import annotations

import math
from typing import NamedTuple

from workflow_lib.mlm.models import ArchSpec


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


def make_plan(spec: ArchSpec, cfg: dict, n_train: int) -> Plan:
    """The plan of training ``spec`` on ``n_train`` sequences with the ``training`` config
    ``cfg`` (all keys present): mini-batches of ``batch_size`` sequences (transformers with
    ``vanilla_sites: all``: of (sequence, site) pairs), the remainder of an epoch dropped; about
    ten progress lines per run, on evaluated epochs."""
    epochs, eval_every, restarts = int(cfg["epochs"]), int(cfg["eval_every"]), int(cfg["restarts"])
    if min(epochs, eval_every, restarts) < 1:
        raise ValueError("epochs, eval_every and restarts must be >= 1")
    all_sites = spec.kind == "transformer" and cfg["vanilla_sites"] == "all"
    units = n_train * spec.L if all_sites else n_train  # supervised units per epoch
    batch = min(int(cfg["batch_size"]), units)
    log_every = eval_every * max(1, math.ceil(epochs / (10 * eval_every)))
    return Plan(epochs, units // batch, all_sites, batch, restarts, float(cfg["l2"]), eval_every,
                log_every)
