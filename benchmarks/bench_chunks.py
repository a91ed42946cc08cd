"""Paper-preset training cost per realisation against the realisations per job, on any backend.

Run: ``python benchmarks/bench_chunks.py [--preset FILE] [--chunks 1 30] [--epochs E] [--csv
PATH]``. For each architecture of the preset (default ``config/paper.yaml``; the quick
``config.yaml`` with ``--chunks 1 3``): factored attention and an interpolation level with the
preset's restarts, the vanilla transformers, and for each chunk size K
(``compute.realisations_per_job``), one program trains K realisations side by side
(``workflow_lib.mlm.train.train_many``) for ``--epochs`` epochs of the preset's mini-batches on
data of the preset's shapes; a row holds its compile time, its optimiser steps per second, and
the projected time per realisation of the preset's job: (compile + epochs x steps per epoch /
rate) / K, the factored family's L-BFGS polish (one realisation after the other, on the CPU)
and the process start not included.
The ``projection`` rows sum that over the preset's training jobs (every architecture and
interpolation level, ``realisations`` of them each) at the chunk size that costs least: the
training's job time, and its wall time spread over 2 and 8 such processes (on a GPU, whose
jobs run one after another, the wall time is the job time).

With XLA limited to one thread per process (``XLA_FLAGS`` below), a row is one core's work, so
the wall times over 2 and 8 cores are the job time divided by the cores:

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
        .venv/bin/python benchmarks/bench_chunks.py
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
from record import Recorder, default_csv

import workflow_lib  # noqa: F401  (float64 on)
from workflow_lib.core.config import read_config_files
from workflow_lib.mlm.architectures import interpolation_runs, parse_arch
from workflow_lib.mlm.compiled import CompiledRuns
from workflow_lib.mlm.options import TrainingOptions
from workflow_lib.mlm.plan import make_plan
from workflow_lib.mlm.train import Problem, train_many
from workflow_lib.potts.model import random_colour_couplings, random_couplings
from workflow_lib.studies.potts_paper.registry import family_option
from workflow_lib.studies.potts_paper.stages_fits import training_options

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("table", "arch", "restarts", "chunk", "compile_s", "steps_per_s",
           "projected_min_per_realisation", "jobs", "job_hours", "wall_hours_2_cores",
           "wall_hours_8_cores")  # fmt: skip


def problems(k: int, L: int, C: int, n_train: int, n_test: int) -> list[Problem]:
    """``k`` problems of the preset's shapes: uniform random sequences (the cost of a step does
    not depend on the data) under random couplings."""
    rng = np.random.default_rng(0)
    J = np.asarray(random_couplings(jax.random.key(0), L))
    U = np.asarray(random_colour_couplings(jax.random.key(1), C))
    return [Problem(rng.integers(0, C, (n_train, L)), rng.integers(0, C, (n_test, L)), J, U, 0.5,
                    jax.random.key(i)) for i in range(k)]  # fmt: skip


def timed_options(training: dict, arch: str, epochs: int) -> TrainingOptions:
    """The stage's options of ``arch`` (``training_options``) for ``epochs`` epochs, evaluated
    at the last, without the polish."""
    return replace(training_options(training, arch), epochs=epochs, eval_every=epochs,
                   polish_max_iter=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", type=Path, default=REPO / "config" / "paper.yaml",
                        help="the preset whose training is timed (merged over config.yaml)")
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 30],
                        help="realisations per job to time")
    parser.add_argument("--epochs", type=int, default=None,
                        help="epochs timed per program (default: the preset's eval_every, so "
                             "that the timed run holds the preset's share of evaluation)")
    parser.add_argument("--csv", type=Path, default=default_csv(__file__),
                        help="CSV file the rows are appended to")  # fmt: skip
    args = parser.parse_args()
    cfg = read_config_files([REPO / "config.yaml", args.preset])
    t, p, s = cfg["training"], cfg["potts"], cfg["sampling"]
    epochs = args.epochs or t["eval_every"]
    logging.getLogger("workflow_lib.mlm").setLevel(logging.ERROR)  # short runs: not converged
    levels = interpolation_runs(t["interpolation_a"])
    level = levels[len(levels) // 2]  # stands for all
    archs = [*t["architectures"], level]
    jobs = {arch: 1 for arch in t["architectures"]} | {level: len(levels)}
    rec = Recorder(args.csv, COLUMNS)
    data = problems(max(args.chunks), p["L"], p["C"], s["n_train"], s["n_test"])
    print(f"backend {jax.default_backend()}; {epochs} epochs timed of the preset's "
          f"{t['epochs']}; projected minutes per realisation of a job of {args.preset.name}")
    print(f"{'arch':<14}{'restarts':>9}{'chunk':>7}{'compile s':>11}{'steps/s':>9}"
          f"{'min/realisation':>17}")
    best: dict[str, float] = {}
    for arch in archs:
        family, _ = parse_arch(arch)
        options = timed_options(t, arch, epochs)
        steps = make_plan(options.arch_spec(family, p["L"], p["C"]), options, s["n_train"]).steps
        for k in args.chunks:
            m = train_many(family, options, data[:k],
                           CompiledRuns())[0].metrics
            minutes = (m["compile_seconds"] + t["epochs"] * steps / m["steps_per_second"]) / k / 60
            best[arch] = min(best.get(arch, np.inf), minutes)
            n = family_option(t, family, "restarts")
            print(f"{arch:<14}{n:>9}{k:>7}"
                  f"{m['compile_seconds']:>11.1f}{m['steps_per_second']:>9.1f}{minutes:>17.2f}")
            rec.add(table="per realisation", arch=arch, restarts=n, chunk=k,
                    compile_s=round(m["compile_seconds"], 2),
                    steps_per_s=round(m["steps_per_second"], 2),
                    projected_min_per_realisation=round(minutes, 3))
    hours = sum(best[arch] * jobs[arch] for arch in archs) * cfg["realisations"] / 60
    n_jobs = sum(jobs.values()) * cfg["realisations"]
    print(f"the preset's training: {n_jobs} fits, {hours:.2f} h of job time; wall "
          f"{hours / 2:.2f} h on 2 cores, {hours / 8:.2f} h on 8")
    rec.add(table="projection", jobs=n_jobs, job_hours=round(hours, 2),
            wall_hours_2_cores=round(hours / 2, 2), wall_hours_8_cores=round(hours / 8, 2))


if __name__ == "__main__":
    main()
