"""Time the replica theory curve and the ridge simulation grid of Fig. 3 left (Rende et al. 2024).

Run as ``python benchmarks/bench_replica.py [--csv PATH]``; each timing is also appended to
``--csv`` (default ``benchmarks/results/bench_replica.csv``) with the command and the host
(``benchmarks/record.py``). Timings depend on BLAS threading; on a shared machine set
OPENBLAS_NUM_THREADS=1 for stable numbers.
"""

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from record import Recorder, default_csv

from workflow_lib.replica.gaussian import gaussian_task, goe_couplings
from workflow_lib.replica.saddle import generalisation_curve
from workflow_lib.replica.simulate import simulate_ridge

L, DELTA, N_REAL = 200, 3.0, 30


def timed(rec: Recorder, label: str, fn: Callable, *args, **kwargs):
    """Run fn(*args, **kwargs), print its wall time and append it to the CSV, return its result."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    seconds = time.perf_counter() - start
    print(f"{label:<52s} {seconds:7.3f} s")
    rec.add(step=label, seconds=round(seconds, 3))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--csv", type=Path, default=default_csv(__file__), help="CSV file the rows are appended to"
    )
    rec = Recorder(parser.parse_args().csv, ("step", "seconds"))
    J = goe_couplings(np.random.default_rng(0), L)
    task = timed(rec, f"task (L = {L}, Δ = {DELTA})", gaussian_task, J, DELTA)
    theory_alphas = np.linspace(0.05, 5.0, 200)
    sim_alphas = np.concatenate(
        [np.linspace(0.1, 0.8, 8), [0.9, 0.95, 1.05, 1.1], np.linspace(1.2, 5.0, 13)]
    )
    for lam in (0.0, 1e-2):
        for method in ("kappa", "saddle"):
            label = f"theory, {theory_alphas.size} α, λ = {lam:g}, {method}"
            timed(rec, label, generalisation_curve, task, theory_alphas, lam, method=method)
        label = f"simulation, {sim_alphas.size} α × {N_REAL} realisations, λ = {lam:g}"
        timed(rec, label, simulate_ridge, task, sim_alphas, lam, N_REAL, np.random.default_rng(1))


if __name__ == "__main__":
    main()
