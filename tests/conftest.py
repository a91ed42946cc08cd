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

import workflow_lib  # noqa: F401  (enables float64)
from workflow_lib.potts import model

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny_model():
    """``(J: (4, 4), U: (3, 3))``: L=4, C=3, random Gaussian J and U."""
    J = model.random_couplings(jax.random.key(11), 4)
    U = model.random_colour_couplings(jax.random.key(12), 3)
    return np.asarray(J), np.asarray(U)
