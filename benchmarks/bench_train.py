"""Training speed of the MLM models and time-to-optimum of factored attention (CPU or GPU).

Run: ``python benchmarks/bench_train.py [--quick] [--csv PATH]``; every row (and the ceiling) is
also appended to ``--csv`` (default ``benchmarks/results/bench_train.csv``) with the command and
the host (``benchmarks/record.py``), the ``table`` column telling the tables apart.

1. Steps/s of every architecture (Adam, batch 100, 2 restarts side by side, compilation and
   evaluation excluded) and the cost of one evaluation, on the paper-sized problem: L = C = 20,
   M = 3000 training and 1000 test sequences; with the floating-point work of one step (XLA's
   count for one restart: gradient and Adam update), the arithmetic rate it reaches, to set next
   to the rate of the transformers' largest matrix product alone (printed above the table).
2. Wall time, compilation included, for factored attention (best of two restarts) to end within
   1 % of the optimal test loss, for the fewest epochs of a short ladder that get there, next to
   the pseudo-likelihood baselines by L-BFGS on the same data. "warm": in this process, after other
   compilations; "cold": the first ``train_mlm`` call of a fresh process (imports excluded) with
   the persistent compilation cache off; "compile s": the part of "wall s" before training starts
   (tracing and XLA compilation of the one program a fit runs). The converged fit sits at the
   finite-sample floor (about 1.006-1.009 x optimum on 3000 sequences), so 1 % leaves little slack.

Data: J, U ~ N(0, 1) symmetric (seed 0), beta = 0.7, 4000 independent Gibbs chains of 200 sweeps
from uniform random starts (``workflow_lib.potts.gibbs.independent_chains``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from record import Recorder, default_csv

import workflow_lib  # noqa: F401  (float64 on)
from workflow_lib.core.config import schema_default, schema_defaults
from workflow_lib.mlm.compiled import CompiledRuns
from workflow_lib.mlm.models import ARCHS, init
from workflow_lib.mlm.objective import mlm_loss
from workflow_lib.mlm.options import TrainingOptions
from workflow_lib.mlm.plm import fit_plm
from workflow_lib.mlm.train import train_mlm
from workflow_lib.potts.gibbs import independent_chains
from workflow_lib.potts.model import random_colour_couplings, random_couplings
from workflow_lib.studies.potts_paper.stages_fits import plm_options

L = C = 20
BETA = 0.7
M_TRAIN, M_TEST = 3000, 1000
# the schema's defaults but the benchmark's reference start: unit-scale weights
ADAM = TrainingOptions(init_scale=1.0)
COLUMNS = ("table", "name", "epochs", "steps_per_s", "eval_s", "wall_s", "compile_s",
           "test_over_opt", "mflop", "gflop_per_s", "abs_r_A_J")  # fmt: skip



def make_data(seed: int = 0) -> dict[str, np.ndarray]:
    kJ, kU, kS = jax.random.split(jax.random.key(seed), 3)
    J, U = random_couplings(kJ, L), random_colour_couplings(kU, C)
    seqs, _ = independent_chains(kS, J, U, BETA, n_chains=M_TRAIN + M_TEST, n_sweeps=200)
    seqs = np.asarray(seqs)
    return {"train": seqs[:M_TRAIN], "test": seqs[M_TRAIN:], "J": np.asarray(J), "U": np.asarray(U)}


PROGRAMS = CompiledRuns()  # "warm": fits with equal shapes in this process compile once


def fit(arch: str, options: TrainingOptions, data: dict[str, np.ndarray]):
    return train_mlm(arch, options, data["train"], data["test"], data["J"], data["U"], BETA,
                     jax.random.key(1), PROGRAMS)  # fmt: skip


def step_flops(arch: str, options: TrainingOptions, batch: int) -> float:
    """XLA's floating-point operation count of one training step of one restart: the gradient
    of the mini-batch loss and the Adam update."""
    spec = options.arch_spec(arch, L, C)
    params = init(spec, jax.random.key(0))
    opt = optax.adam(1e-3)
    seqs = jnp.zeros((batch, L), jnp.int32)
    sites = jnp.zeros(batch, jnp.int32) if spec.kind == "transformer" else None

    def step(params, opt_state):
        grads = jax.grad(lambda p: mlm_loss(spec, p, seqs, sites))(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    cost = jax.jit(step).lower(params, opt.init(params)).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost)["flops"])


def matmul_rate(rows: int, inner: int, cols: int, repeats: int = 200) -> float:
    """FLOP/s of ``(rows, inner) @ (inner, cols)`` float32 products in a ``lax.scan`` (each
    feeding the next, so none is skipped): the ceiling for a model built of such products."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(rows, inner)), jnp.float32)
    ws = jnp.asarray(0.1 * rng.normal(size=(repeats, inner, cols)), jnp.float32)
    run = jax.jit(lambda x: lax.scan(lambda x, w: (x + 1e-3 * (x @ w)[:, :inner], None), x,
                                     ws)[0])  # fmt: skip
    run(x).block_until_ready()
    best = min(timed_once(lambda: run(x).block_until_ready()) for _ in range(5))
    return repeats * 2 * rows * inner * cols / best


def timed_once(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def cold_run(path: str, epochs: int) -> None:
    """Child process: one factored fit, print its metrics and test/optimal ratio as JSON."""
    jax.config.update("jax_enable_compilation_cache", False)  # cold: compile, never load
    data = dict(np.load(path))
    res = fit("factored", replace(ADAM, epochs=epochs), data)
    print(json.dumps({**res.metrics, "ratio": res.metrics["test_loss"] / res.optimal_loss}))


def row(rec: Recorder, name: str, epochs, m: dict, ratio: float) -> None:
    wall, compile_s = m["wall_seconds"], m.get("compile_seconds", float("nan"))
    r = abs(m.get("pearson_r", float("nan")))
    print(f"{name:<36}{epochs!s:>7}{wall:>9.2f}{compile_s:>11.2f}{ratio:>10.4f}{r:>10.4f}")
    rec.add(table="to 1.01 x optimum", name=name, epochs=epochs, wall_s=round(wall, 2),
            compile_s=round(compile_s, 2), test_over_opt=round(ratio, 4), abs_r_A_J=round(r, 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs for the speed table")
    parser.add_argument("--archs", nargs="+", default=list(ARCHS), help="architectures of table 1")
    parser.add_argument("--speed-only", action="store_true", help="table 1 only")
    parser.add_argument("--csv", type=Path, default=default_csv(__file__),
                        help="CSV file the rows are appended to")  # fmt: skip
    parser.add_argument("--cold-run", nargs=2, metavar=("DATA", "EPOCHS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_run:
        return cold_run(args.cold_run[0], int(args.cold_run[1]))
    rec = Recorder(args.csv, COLUMNS)
    print(f"devices: {jax.devices()}")
    t0 = time.perf_counter()
    data = make_data()
    print(f"data: {M_TRAIN}+{M_TEST} sequences, L=C={L}, beta={BETA}, "
          f"{time.perf_counter() - t0:.1f} s")  # fmt: skip

    print("\n1. training speed (Adam, batch 100, 2 restarts side by side)")
    print("   steps/s: marginal rate between runs of E and 2E epochs, evaluated at the end only;")
    print("   eval s: one evaluation (all sites of the 1000 test sequences, both restarts)")
    print("   MFLOP: one step of one restart (XLA's count); GFLOP/s: steps/s x restarts x MFLOP")
    dim = schema_default("training.model_dim")
    rows, cols = ADAM.batch_size * L, 3 * dim  # the transformers' query-key-value product
    ceiling = matmul_rate(rows, dim, cols)
    print(f"   ceiling: ({rows} x {dim}) @ ({dim} x {cols}) products alone: "
          f"{ceiling / 1e9:.1f} GFLOP/s")
    rec.add(table="ceiling", name=f"({rows} x {dim}) @ ({dim} x {cols}) products alone",
            gflop_per_s=round(ceiling / 1e9, 1))  # fmt: skip
    print(f"{'arch':<18}{'E':>4}{'steps/s':>10}{'eval s':>9}{'compile s':>11}{'test/opt':>10}"
          f"{'MFLOP':>8}{'GFLOP/s':>9}")  # fmt: skip
    for arch in args.archs:
        transformer = arch.startswith("vanilla")
        E = (2 if transformer else 5) if args.quick else (5 if transformer else 20)
        options = replace(ADAM, a=0.5, learning_rate=0.003 if transformer else 0.03)
        runs = [fit(arch, replace(options, epochs=e, eval_every=k), data) for e, k in
                [(E, E), (2 * E, 2 * E), (E, 1)]]  # fmt: skip
        busy = [r.metrics["steps"] / r.metrics["steps_per_second"] for r in runs]
        rate = (runs[1].metrics["steps"] - runs[0].metrics["steps"]) / (busy[1] - busy[0])
        eval_s = (busy[2] - busy[0]) / (E - 1)
        m = runs[1].metrics
        ratio = m["test_loss"] / runs[1].optimal_loss
        flops = step_flops(arch, options, ADAM.batch_size)
        gflops = rate * ADAM.restarts * flops / 1e9
        print(f"{arch:<18}{E:>4}{rate:>10.0f}{eval_s:>9.3f}{m['compile_seconds']:>11.2f}"
              f"{ratio:>10.4f}{flops / 1e6:>8.1f}{gflops:>9.1f}")  # fmt: skip
        rec.add(table="training speed", name=arch, epochs=E, steps_per_s=round(rate),
                eval_s=round(eval_s, 3), compile_s=round(m["compile_seconds"], 2),
                test_over_opt=round(ratio, 4), mflop=round(flops / 1e6, 1),
                gflop_per_s=round(gflops, 1))  # fmt: skip

    if args.speed_only:
        return None
    print("\n2. factored attention to <= 1.01 x optimal test loss (wall s include compilation)")
    print(f"{'method':<36}{'epochs':>7}{'wall s':>9}{'compile s':>11}{'test/opt':>10}"
          f"{'|r(A,J)|':>10}")  # fmt: skip
    ladders = {
        "adam lr 0.03 batch 100": (ADAM, (5, 10, 15, 20, 30, 50)),
        "sgd lr 1 batch 100": (replace(ADAM, optimizer="sgd", learning_rate=1.0), (20, 50, 100)),
        "sgd lr 0.1 batch 100 (paper range)": (
            replace(ADAM, optimizer="sgd", learning_rate=0.1),
            (100,),
        ),
    }
    adam_epochs = None
    for name, (options, ladder) in ladders.items():
        for epochs in ladder:
            res = fit("factored", replace(options, epochs=epochs), data)
            ratio = res.metrics["test_loss"] / res.optimal_loss
            if ratio <= 1.01 or epochs == ladder[-1]:
                break
        adam_epochs = adam_epochs or epochs
        row(rec, f"{name} (warm)", epochs, res.metrics, ratio)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "data.npz")
        np.savez(path, **data)
        cmd = [sys.executable, __file__, "--cold-run", path, str(adam_epochs)]
        out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    row(rec, "adam lr 0.03 batch 100 (cold)", adam_epochs, out, out["ratio"])
    for kind in ("factored", "full"):
        options = replace(plm_options(kind, schema_defaults("plm")), restarts=2)
        res = fit_plm(kind, options, data["train"], data["test"], data["J"], data["U"], BETA,
                      jax.random.key(1))
        m = res.metrics
        name = f"PLM {kind} (L-BFGS, {m['iterations']} it)"
        row(rec, name, "", m, m["test_loss"] / res.optimal_loss)
    print(f"optimal test loss: {res.optimal_loss:.4f} nats")


if __name__ == "__main__":
    main()
