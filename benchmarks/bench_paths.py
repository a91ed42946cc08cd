"""Time the attention-paths pipeline on the paper's hidden-Markov-chain task (spec §5 table).

Run as ``python benchmarks/bench_paths.py [--nuts]``: attention + path features for 1 100
sequences, the kernel through Φ vs the materialised path-path kernels, one S + gradient, the
theory solve per width, and (``--nuts``) NUTS draws per second at N = 10. On a shared machine set
OMP_NUM_THREADS=1 and XLA_FLAGS=--xla_cpu_multi_thread_eigen=false for stable numbers.
"""

import argparse
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

import workflow_lib  # noqa: F401  (float64)
from workflow_lib.attention import model, sampling, tasks, theory

T_RIDGE = 0.01


def timed(label: str, fn: Callable, *args, repeat: int = 1, **kwargs):
    """Run fn(*args, **kwargs) once to compile, then ``repeat`` times; print the mean time."""
    out = jax.block_until_ready(fn(*args, **kwargs))
    start = time.perf_counter()
    for _ in range(repeat):
        out = jax.block_until_ready(fn(*args, **kwargs))
    print(f"{label:<58s} {(time.perf_counter() - start) / repeat * 1e3:9.2f} ms")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nuts", action="store_true", help="also time NUTS at N = 10")
    args = parser.parse_args()
    task = tasks.MarkovTask()
    k_train, k_test, k_heads = jax.random.split(jax.random.key(0), 3)
    x_train, y = tasks.dataset(k_train, 100, task)
    x_test, y_test = tasks.dataset(k_test, 1000, task)
    x = jnp.concatenate([x_train, x_test])
    heads = tasks.heads(k_heads, task)
    weights = [
        jnp.stack([heads[h] for h in layer]) for layer in tasks.EXPERIMENTS["four_paths"].network
    ]

    def features(x):
        return model.path_features(x, [model.attention_maps(x, W) for W in weights], task.readout())

    phi_all = timed("attention + Φ, 1 100 sequences x 4 heads", features, x)
    phi, phi_test = phi_all[:100], phi_all[100:]
    U = jnp.eye(4) + 0.1
    kernel = jax.jit(model.kernel)
    timed("K_U through Φ, P = 100 (per call)", kernel, phi, phi, U, repeat=50)
    C = timed("materialised path-path kernels (once)", jax.jit(model.path_kernels), phi)
    timed(
        "K_U from path-path kernels (per call)",
        jax.jit(lambda U: jnp.einsum("pq,pqab->ab", U, C)),
        U,
        repeat=50,
    )
    grad = jax.jit(jax.value_and_grad(lambda U: theory.energy(U, phi, y, T_RIDGE)))
    timed("energy + gradient through Φ (per call)", grad, U, repeat=50)
    for N in (10, 100, 1000):
        sol = timed(
            f"theory solve, N = {N} (L-BFGS, grad and Hessian checks)",
            theory.minimise_action,
            phi,
            y,
            (2, 2),
            N,
            T_RIDGE,
        )
        mean, _ = theory.predictor(phi, y, phi_test, jnp.asarray(sol.Us[0]), T_RIDGE)
        print(f"    {sol.iterations} iterations, accuracy {theory.accuracy(mean, y_test):.3f}")
    if args.nuts:
        start = time.perf_counter()
        s = sampling.run_nuts(
            jax.random.key(1),
            phi,
            y,
            (2, 2),
            10,
            T_RIDGE,
            warmup=200,
            samples=200,
            chains=2,
            blocks=1,
        )
        print(
            f"NUTS N = 10, 2 chains x (200 + 200): {time.perf_counter() - start:.1f} s in all, "
            f"sampling {2 * 200 / s.sampling_seconds:.1f} draws/s, "
            f"{s.mean_steps.mean():.0f} leapfrog steps per draw"
        )


if __name__ == "__main__":
    main()
