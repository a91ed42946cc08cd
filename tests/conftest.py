"""Shared fixtures: tiny Potts models and the repository root."""

from __future__ import annotations

import os
from pathlib import Path

# One XLA thread per test process, as the workflow's single-thread jobs: far steadier timings on
# a shared 2-core machine. Set before JAX starts its backend.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import jax
import numpy as np
import pytest
import yaml

import workflow_lib  # noqa: F401  (enables float64)
from workflow_lib.potts import model

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny_model():
    """``(J: (4, 4), U: (3, 3))``: L=4, C=3, random Gaussian J and U."""
    J = model.random_couplings(jax.random.key(11), 4)
    U = model.random_colour_couplings(jax.random.key(12), 3)
    return np.asarray(J), np.asarray(U)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """The default target (every table and figure) built once per session on the tiny config
    ``tests.workflow_runs.TINY_ALL``, in a copy of the repository (results under
    ``results/``). Read it; to modify it, ``clone`` it first."""
    from tests.workflow_runs import TINY_ALL, repo_copy, snakemake_in

    wd = repo_copy(tmp_path_factory.mktemp("tiny_run") / "wf")
    (wd / "tiny.yaml").write_text(yaml.safe_dump({**TINY_ALL, "results": "results"}))
    run = snakemake_in(wd)
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    return wd
