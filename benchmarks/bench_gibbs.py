"""Gibbs sampler speed against sequence length: JAX kernels next to a plain vectorised NumPy
sampler, in one run.

    python benchmarks/bench_gibbs.py [--lengths 20,50,100,200,500] [--colours 20] [--chains 200]
                                     [--realisations 30] [--replicas 8] [--work 2e9]
                                     [--csv PATH]

For each L (C colours, beta = 0.9 / sqrt(L / 20), J, U ~ N(0, 1) symmetric as in the paper),
prints for
- ``numpy``: the reference (B chains, one-hot matrix product for the fields, inverse-CDF draw);
- ``chains``: ``gibbs.independent_chains``, B chains (split over one XLA CPU device per core);
- ``single R=1``: ``gibbs.single_chain``, one chain (sequential updates, the paper's protocol);
- ``single R=30``: R realisations batched in one call;
- ``tempering R=8``: ``tempering.parallel_tempering``, one run of R replicas (swaps after every
  sweep); its rate is spin updates/s per replica (R times that in total), to set next to
  ``single R=1``;
the compile time (first call minus a compiled call of the same size), spin updates/s,
updates/s x L (work-normalised: each update costs O(L C)) and the ratio to NumPy. Runs are
sized to about ``--work`` multiply-adds each (so about the same time at every L). Runs on any
JAX backend (the NumPy reference stays on the CPU). Each row is also appended to ``--csv``
(default ``benchmarks/results/bench_gibbs.csv``) with the command and the host
(``benchmarks/record.py``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import jax

jax.config.update("jax_num_cpu_devices", os.cpu_count() or 1)  # CPU backend only

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from record import Recorder, default_csv  # noqa: E402

from workflow_lib.potts import gibbs, model, tempering  # noqa: E402

COLUMNS = ("L", "C", "sampler", "compile_s", "mupd_per_s", "mupd_per_s_x_L", "vs_numpy")


def numpy_gibbs(rng: np.random.Generator, J, U, beta, n_chains: int, n_sweeps: int) -> np.ndarray:
    """Reference sampler: B chains, cyclic sweeps, fields by a one-hot matrix product."""
    L, C = J.shape[0], U.shape[0]
    W = (beta * J[:, :, None, None] * U[None, None]).reshape(L, L * C, C).astype(np.float32)
    S = rng.integers(0, C, size=(n_chains, L))
    X = np.zeros((n_chains, L, C), np.float32)
    X[np.arange(n_chains)[:, None], np.arange(L), S] = 1.0
    flat = X.reshape(n_chains, L * C)
    for _ in range(n_sweeps):
        for i in range(L):
            f = flat @ W[i]
            p = np.exp(f - f.max(axis=1, keepdims=True))
            cdf = np.cumsum(p, axis=1)
            u = rng.random(n_chains, np.float32)[:, None] * cdf[:, -1:]
            S[:, i] = np.minimum((cdf <= u).sum(axis=1), C - 1)
            X[:, i] = 0.0
            X[np.arange(n_chains), i, S[:, i]] = 1.0
    return S


def timed(fn: Callable[[], object], repeats: int = 2) -> tuple[float, float]:
    """``(first call, best of repeats)`` wall times of ``fn``; results are waited for."""
    t = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - t
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t)
    return first, best


def row(rec: Recorder, name: str, L: int, C: int, updates: float, first: float, best: float,
        ref: float | None) -> None:  # fmt: skip
    """Print one sampler's figures and append them to the CSV."""
    rate = updates / best
    compile_s = f"{first - best:7.1f}" if first > 0 else "      -"
    ratio = f"{rate / ref:7.1f}x" if ref else "        "
    print(f"{L:5d}  {name:14s} {compile_s}  {rate / 1e6:9.3f}  {rate * L / 1e6:11.1f}  {ratio}",
          flush=True)
    rec.add(L=L, C=C, sampler=name, compile_s=round(first - best, 1) if first > 0 else None,
            mupd_per_s=round(rate / 1e6, 3), mupd_per_s_x_L=round(rate * L / 1e6, 1),
            vs_numpy=round(rate / ref, 1) if ref else None)  # fmt: skip


def bench_length(
    rec: Recorder, L: int, C: int, B: int, R: int, replicas: int, work: float, numpy_work: float
) -> None:
    beta = 0.9 / np.sqrt(L / 20)  # keeps the fields of order 1 as L grows
    J, U = model.draw_couplings(jax.random.key(L), L, C, "gaussian")
    per_update = L * C  # multiply-adds of one update

    def sweeps(chains: int, budget: float) -> int:
        return max(1, int(budget / (per_update * L * chains)))

    T = sweeps(B, numpy_work)
    t = time.perf_counter()
    numpy_gibbs(np.random.default_rng(0), J, U, beta, B, T)
    best = time.perf_counter() - t
    np_rate = B * L * T / best
    row(rec, "numpy", L, C, B * L * T, 0.0, best, None)

    Jj, Uj = jnp.asarray(J), jnp.asarray(U)
    T = max(2, sweeps(B, work))
    first, best = timed(lambda: gibbs.independent_chains(
        jax.random.key(1), Jj, Uj, beta, n_chains=B, n_sweeps=T))
    row(rec, f"chains B={B}", L, C, B * L * T, first, best, np_rate)

    for r in (1, R):
        keys = jax.random.split(jax.random.key(2), r)
        Jr, Ur, br = jnp.stack([Jj] * r), jnp.stack([Uj] * r), jnp.full(r, beta)
        between = max(1, sweeps(r, work) // 10)
        first, best = timed(lambda: gibbs.single_chain(  # noqa: B023
            keys, Jr, Ur, br, n_save=10, burn_in=0, sweeps_between=between))  # noqa: B023
        row(rec, f"single R={r}", L, C, r * L * 10 * between, first, best, np_rate)

    between = max(1, sweeps(replicas, work) // 10)
    first, best = timed(lambda: tempering.parallel_tempering(
        jax.random.split(jax.random.key(3), 1), Jj, Uj, jnp.array([beta]), n_replicas=replicas,
        ladder_min=0.5, n_save=10, burn_in=0, sweeps_between=between))
    row(rec, f"tempering R={replicas}", L, C, L * 10 * between, first, best, np_rate)  # per replica


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default="20,50,100,200,500",
                    help="comma-separated sequence lengths L")
    ap.add_argument("--colours", type=int, default=20, help="C")
    ap.add_argument("--chains", type=int, default=200, help="B of independent_chains and numpy")
    ap.add_argument("--realisations", type=int, default=30, help="R of batched single_chain")
    ap.add_argument("--replicas", type=int, default=8, help="R of parallel tempering")
    ap.add_argument("--work", type=float, default=2e9,
                    help="multiply-adds per timed JAX call (sets the number of sweeps)")
    ap.add_argument("--numpy-work", type=float, default=2e8,
                    help="multiply-adds of the NumPy reference run")
    ap.add_argument("--csv", type=Path, default=default_csv(__file__),
                    help="CSV file the rows are appended to")
    args = ap.parse_args()
    rec = Recorder(args.csv, COLUMNS)
    print(f"C = {args.colours}, jax {jax.__version__}, backend {jax.default_backend()}, "
          f"{len(jax.devices())} device(s); numpy on the CPU")
    print("    L  sampler        compile s  M upd/s  M upd/s x L  vs numpy")
    for L in (int(x) for x in args.lengths.split(",")):
        bench_length(rec, L, args.colours, args.chains, args.realisations, args.replicas, args.work,
                     args.numpy_work)


if __name__ == "__main__":
    main()
