"""Time the attention-paths pipeline on the paper's hidden-Markov-chain task (its Fig. 2 sizes):
attention + path features for 1 100 sequences, the kernel through Φ vs the materialised path-path
kernels, one S + gradient, the theory solve per width, and (``--nuts``) NUTS draws per second
on each of ``sampling.VARIABLES`` at N = 10, and on the order parameters at N = 100 and 1000.

Run as ``python benchmarks/bench_paths.py [--nuts] [--csv PATH]``. On a shared machine set
OMP_NUM_THREADS=1 and XLA_FLAGS=--xla_cpu_multi_thread_eigen=false for stable numbers. Each
timing is also appended to ``--csv`` (default ``benchmarks/results/bench_paths.csv``) with the
command and the host (``benchmarks/record.py``).
"""

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
from record import Recorder, default_csv

import workflow_lib  # noqa: F401  (float64)
from workflow_lib.attention import designs, model, sampling, tasks, theory

T_RIDGE = 0.01
COLUMNS = ("step", "ms", "iterations", "accuracy", "seconds", "draws_per_s", "leapfrog_steps")


def timed(rec: Recorder | None, label: str, fn: Callable, *args, repeat: int = 1, **kwargs):
    """Run fn(*args, **kwargs) once to compile, then ``repeat`` times; print the mean time and
    append it to the CSV (unless ``rec`` is None); return the last result and the time in ms."""
    out = jax.block_until_ready(fn(*args, **kwargs))
    start = time.perf_counter()
    for _ in range(repeat):
        out = jax.block_until_ready(fn(*args, **kwargs))
    ms = (time.perf_counter() - start) / repeat * 1e3
    print(f"{label:<58s} {ms:9.2f} ms")
    if rec is not None:
        rec.add(step=label, ms=round(ms, 2))
    return out, ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nuts", action="store_true", help="also time NUTS")
    parser.add_argument(
        "--csv", type=Path, default=default_csv(__file__), help="CSV file the rows are appended to"
    )
    args = parser.parse_args()
    rec = Recorder(args.csv, COLUMNS)
    task = tasks.MarkovTask()
    k_train, k_test, k_heads = jax.random.split(jax.random.key(0), 3)
    x_train, y = tasks.dataset(k_train, 100, task)
    x_test, y_test = tasks.dataset(k_test, 1000, task)
    x = jnp.concatenate([x_train, x_test])
    heads = tasks.heads(k_heads, task)
    weights = [
        jnp.stack([heads[h] for h in layer]) for layer in designs.EXPERIMENTS["four_paths"].network
    ]

    def features(x):
        return model.path_features(x, [model.attention_maps(x, W) for W in weights], task.readout())

    phi_all, _ = timed(rec, "attention + Φ, 1 100 sequences x 4 heads", features, x)
    phi, phi_test = phi_all[:100], phi_all[100:]
    U = jnp.eye(4) + 0.1
    kernel = jax.jit(model.kernel)
    timed(rec, "K_U through Φ, P = 100 (per call)", kernel, phi, phi, U, repeat=50)
    C, _ = timed(rec, "materialised path-path kernels (once)", jax.jit(model.path_kernels), phi)
    timed(
        rec,
        "K_U from path-path kernels (per call)",
        jax.jit(lambda U: jnp.einsum("pq,pqab->ab", U, C)),
        U,
        repeat=50,
    )
    grad = jax.jit(jax.value_and_grad(lambda U: theory.energy(U, phi, y, T_RIDGE)))
    timed(rec, "energy + gradient through Φ (per call)", grad, U, repeat=50)
    for N in (10, 100, 1000):
        label = f"theory solve, N = {N} (L-BFGS, grad and Hessian checks)"
        sol, ms = timed(
            None,
            label,
            theory.minimise_action,
            phi,
            y,
            (2, 2),
            N,
            T_RIDGE,
        )
        mean, _ = theory.predictor(phi, y, phi_test, jnp.asarray(sol.Us[0]), T_RIDGE)
        accuracy = theory.accuracy(mean, y_test)
        print(f"    {sol.iterations} iterations, accuracy {accuracy:.3f}")
        rec.add(step=label, ms=round(ms, 2), iterations=sol.iterations, accuracy=round(accuracy, 3))
    if args.nuts:
        # the three forms of one posterior side by side at N = 10; the order parameters alone at
        # the widths where sampling the weights is out of reach (its cost does not grow with N)
        runs = [(v, 10) for v in sampling.VARIABLES]
        runs += [("order_parameters", N) for N in (100, 1000)]
        for variables, N in runs:
            start = time.perf_counter()
            s = sampling.run_nuts(jax.random.key(1), phi, y, (2, 2), N, T_RIDGE,
                                  variables=variables, warmup=200, samples=200, chains=2,
                                  blocks=1)
            seconds = time.perf_counter() - start
            label = f"NUTS on the {variables.replace('_', ' ')}, N = {N}, 2 chains x (200 + 200)"
            print(f"{label}: {seconds:.1f} s in all, sampling "
                  f"{2 * 200 / s.sampling_seconds:.1f} draws/s, "
                  f"{s.mean_steps.mean():.0f} leapfrog steps per draw")
            rec.add(step=label, seconds=round(seconds, 1),
                    draws_per_s=round(2 * 200 / s.sampling_seconds, 1),
                    leapfrog_steps=round(float(s.mean_steps.mean())))

if __name__ == "__main__":
    main()
