"""Gibbs sampler speed: JAX kernels against a plain vectorised NumPy sampler, in one run.

    python benchmarks/bench_gibbs.py [--chains 3000] [--sweeps 200]

Prints spin updates per second of
- the NumPy reference (one-hot matrix product for the fields, inverse-CDF draw), B chains;
- ``gibbs.independent_chains`` with the chains split over one XLA CPU device per core;
- ``gibbs.single_chain``: one chain (sequential updates), and R realisations batched;
and the ratio JAX / NumPy. L = C = 20, beta = 0.9, J, U ~ N(0, 1) symmetric, as in the paper.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

import jax

jax.config.update("jax_num_cpu_devices", os.cpu_count() or 1)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from workflow_lib.potts import gibbs, model  # noqa: E402


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


def timed(fn, repeats: int = 3) -> float:
    """Best wall time of ``fn`` over ``repeats`` calls (after one warm-up call)."""
    fn()
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chains", type=int, default=3000)
    ap.add_argument("--sweeps", type=int, default=200)
    ap.add_argument("--realisations", type=int, default=30)
    args = ap.parse_args()
    L = C = 20
    beta = 0.9
    J, U = model.draw_couplings(jax.random.key(0), L, C, "gaussian")
    B, T = args.chains, args.sweeps
    print(f"L = C = {L}, beta = {beta}, {B} chains, {T} sweeps, "
          f"{len(jax.devices())} XLA CPU device(s), jax {jax.__version__}")

    t_np = timed(lambda: numpy_gibbs(np.random.default_rng(0), J, U, beta, B, max(T // 10, 5)), 2)
    np_rate = B * L * max(T // 10, 5) / t_np
    print(f"numpy reference          {np_rate / 1e6:8.2f} M updates/s")

    Jj, Uj = jnp.asarray(J), jnp.asarray(U)
    t = timed(lambda: gibbs.independent_chains(jax.random.key(1), Jj, Uj, beta, n_chains=B,
                                               n_sweeps=T))
    chains_rate = B * L * T / t
    print(f"jax independent_chains   {chains_rate / 1e6:8.2f} M updates/s  "
          f"({chains_rate / np_rate:.1f}x numpy)")

    for R in (1, args.realisations):
        keys = jax.random.split(jax.random.key(2), R)
        Jr, Ur, br = jnp.stack([Jj] * R), jnp.stack([Uj] * R), jnp.full(R, beta)
        n_save, between = 50, 200  # long enough that per-call overheads do not count
        t = timed(partial(gibbs.single_chain, keys, Jr, Ur, br, n_save=n_save, burn_in=0,
                          sweeps_between=between))
        rate = R * L * n_save * between / t
        print(f"jax single_chain R={R:<3d}   {rate / 1e6:8.2f} M updates/s"
              + (" (sequential)" if R == 1 else f" in total ({rate / R / 1e6:.2f} M/s per chain)"))
        if R > 1:
            paper = 4000 * 10_000 * L * R
            print(f"  -> paper protocol (4000 saved x 10 000 sweeps, {R} realisations): "
                  f"{paper / rate / 60:.1f} min")


if __name__ == "__main__":
    main()
