"""The full-batch L-BFGS (``workflow_lib.mlm.lbfgs.minimize``, the starts in turn in compiled
calls of its iteration) against scipy's L-BFGS-B driving the same jitted value and gradient, on the
sample-complexity sweep's fits of the identity reading.

Run: ``python benchmarks/bench_lbfgs.py [--threads T] [--M 56 320] [--starts 8] [--csv PATH]``.
Data: one Potts chain of the identity reading's shapes (L = C = 20, beta 0.6, a mean Hamming
distance near 0.7, as ``config/paper_identity.yaml`` tunes it). For each M, the factored
family's objective (``plm.fit_plm``'s: all sites of the first M sequences, the paper's ``sum``
penalty 1e-3 / (M L)) from ``--starts`` random starts, ``max_iter`` 10 000, ``grad_tol`` 1e-5,
by both optimisers: a row holds the wall and CPU seconds (compilation included), the
iterations summed over the starts, how many converged and the lowest objective. ``--threads``
limits XLA and BLAS to T threads, as a job with ``compute.threads: T`` runs.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from record import Recorder, default_csv

COLUMNS = ("M", "starts", "threads", "optimiser", "wall_s", "cpu_s", "iterations", "converged",
           "best_objective", "ratio_wall_to_scipy")  # fmt: skip
BETA, MAX_ITER, GRAD_TOL, L2 = 0.6, 10_000, 1e-5, 1e-3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--M", type=int, nargs="+", default=[56, 320])
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--csv", type=Path, default=default_csv(__file__))
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    if args.threads == 1:
        os.environ["XLA_FLAGS"] = ("--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")  # fmt: skip

    import jax
    import jax.numpy as jnp
    import numpy as np
    import scipy.optimize
    from jax.flatten_util import ravel_pytree

    import workflow_lib  # noqa: F401  (float64 on)
    from workflow_lib.mlm import lbfgs, plm
    from workflow_lib.mlm.models import ArchSpec, init
    from workflow_lib.potts.gibbs import single_chain
    from workflow_lib.potts.model import draw_couplings

    jax.config.update("jax_enable_compilation_cache", False)  # every run compiles
    L = C = 20
    J, U = draw_couplings(jax.random.key(0), L, C, "gaussian")
    seqs, _ = single_chain(jax.random.key(1)[None], jnp.asarray(J)[None], jnp.asarray(U)[None],
                           jnp.asarray([BETA]), n_save=max(args.M), burn_in=200,
                           sweeps_between=20)  # fmt: skip
    seqs = np.asarray(seqs[0])
    spec = ArchSpec("factored", L, C)
    objective = plm._objective("factored", spec)
    unravel = ravel_pytree(init(spec, jax.random.key(0), jnp.float64))[1]
    value_and_grad = jax.jit(jax.value_and_grad(lambda x, data: objective(unravel(x), data)))

    def fun(x: np.ndarray, data: tuple) -> tuple[float, np.ndarray]:
        """scipy's callback: value and gradient of the flat parameters ``x`` as float64 NumPy."""
        value, grad = value_and_grad(x, data)
        return float(value), np.asarray(grad, np.float64)

    rec = Recorder(args.csv, COLUMNS)
    print(f"{'M':>5} {'optimiser':<22} {'wall s':>8} {'cpu s':>8} {'iterations':>10} "
          f"{'converged':>9} {'best objective':>15}")
    for M in args.M:
        distinct, weights = plm.distinct_with_weights(seqs[:M], C)
        data = (jnp.asarray(distinct), jnp.asarray(weights),
                jnp.float64(plm.effective_l2(L2, "sum", M, L)))  # fmt: skip
        starts = [init(spec, k, jnp.float64) for k in jax.random.split(jax.random.key(2),
                                                                       args.starts)]  # fmt: skip
        runs = {}

        wall, cpu = time.perf_counter(), time.process_time()
        fits = lbfgs.minimize(objective, starts, data, MAX_ITER, GRAD_TOL)
        runs["lbfgs.minimize"] = (time.perf_counter() - wall, time.process_time() - cpu,
                                  [(f.fun, f.nit, f.converged(GRAD_TOL)) for f in fits])

        wall, cpu = time.perf_counter(), time.process_time()
        results = []
        for start in starts:
            res = scipy.optimize.minimize(
                fun, np.asarray(ravel_pytree(start)[0]), args=(data,), jac=True,
                method="L-BFGS-B",
                options={"maxiter": MAX_ITER, "ftol": 0.0, "gtol": GRAD_TOL, "maxcor": 20})
            results.append((res.fun, res.nit, np.max(np.abs(fun(res.x, data)[1])) <= GRAD_TOL))
        runs["scipy L-BFGS-B"] = (time.perf_counter() - wall, time.process_time() - cpu, results)

        for name, (wall_s, cpu_s, fits) in runs.items():
            row = {"M": M, "starts": args.starts, "threads": args.threads, "optimiser": name,
                   "wall_s": round(wall_s, 2), "cpu_s": round(cpu_s, 2),
                   "iterations": sum(f[1] for f in fits), "converged": sum(f[2] for f in fits),
                   "best_objective": f"{min(f[0] for f in fits):.8f}",
                   "ratio_wall_to_scipy": round(wall_s / runs["scipy L-BFGS-B"][0], 3)}
            print(f"{M:>5} {name:<22} {row['wall_s']:>8} {row['cpu_s']:>8} "
                  f"{row['iterations']:>10} {row['converged']:>9} {row['best_objective']:>15}")
            rec.add(**row)


if __name__ == "__main__":
    main()
