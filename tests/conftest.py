"""Shared fixtures: tiny Potts models and the repository root."""

from __future__ import annotations

from pathlib import Path

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
