"""Time the replica theory curve and the ridge simulation grid of Fig. 3 left (spec §6).

Run as ``python benchmarks/bench_replica.py``. Timings depend on BLAS threading; on a shared
machine set OPENBLAS_NUM_THREADS=1 for stable numbers.
"""

import time
from collections.abc import Callable

import numpy as np

from workflow_lib.replica.gaussian import gaussian_task, goe_couplings
from workflow_lib.replica.saddle import generalisation_curve
from workflow_lib.replica.simulate import simulate_ridge

L, DELTA, N_REAL = 200, 3.0, 30


def timed(label: str, fn: Callable, *args, **kwargs):
    """Run fn(*args, **kwargs), print its wall time, return its result."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    print(f"{label:<52s} {time.perf_counter() - start:7.3f} s")
    return out


def main() -> None:
    J = goe_couplings(np.random.default_rng(0), L)
    task = timed(f"task (L = {L}, Δ = {DELTA})", gaussian_task, J, DELTA)
    theory_alphas = np.linspace(0.05, 5.0, 200)
    sim_alphas = np.concatenate(
        [np.linspace(0.1, 0.8, 8), [0.9, 0.95, 1.05, 1.1], np.linspace(1.2, 5.0, 13)]
    )
    for lam in (0.0, 1e-2):
        for method in ("kappa", "saddle"):
            label = f"theory, {theory_alphas.size} α, λ = {lam:g}, {method}"
            timed(label, generalisation_curve, task, theory_alphas, lam, method=method)
        label = f"simulation, {sim_alphas.size} α × {N_REAL} realisations, λ = {lam:g}"
        timed(label, simulate_ridge, task, sim_alphas, lam, N_REAL, np.random.default_rng(1))


if __name__ == "__main__":
    main()
