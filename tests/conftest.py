"""Shared fixtures: tiny Potts models and the repository root."""

from __future__ import annotations

import os
from pathlib import Path

# One XLA and one BLAS thread per test process and the jobs' compiler flags, as the workflow's
# single-thread jobs (``workflow_lib.runtime.jax_setup``): the suite runs on parallel workers, and
# LAPACK's spinning threads (Cholesky in the NUTS tests) slow a test several-fold when the cores are
# busy. BLAS reads its variables when NumPy loads, XLA its flags when JAX starts its backend.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from workflow_lib.runtime.jax_setup import (  # noqa: E402
    JOB_XLA_FLAGS,
    SINGLE_THREAD_XLA_FLAGS,
    use_compilation_cache,
)

os.environ.setdefault("XLA_FLAGS", f"{JOB_XLA_FLAGS} {SINGLE_THREAD_XLA_FLAGS}")
# The jobs' persistent compilation cache: compilation is most of the suite's time, and the
# workers, the tests and the workflow runs in them compile many of the same programs.
use_compilation_cache()

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

import workflow_lib  # noqa: E402, F401  (enables float64)
from workflow_lib.potts import model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


# Fixtures that build something expensive (session-scoped, or module-scoped: ``solution_n10`` of
# test_attention_hmm), and the xdist group of the tests that use each: with ``--dist loadgroup`` a
# group runs on one worker, so each is built once.
SHARED_FIXTURES = ("tiny_run", "cluster", "solution_n10")
# A test using one of these runs the workflow or builds something expensive: marked slow, so
# that ``pytest -m "not slow"`` is the fast loop (unit tests only).
SLOW_FIXTURES = SHARED_FIXTURES


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
        for name in SHARED_FIXTURES:
            if name in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(name))
                break


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
