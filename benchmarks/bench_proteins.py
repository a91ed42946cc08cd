"""Wall time and peak memory of every model of the protein study on PF13354 (Beta-lactamase2), as
the length L of the alignment grows.

    .venv/bin/python benchmarks/bench_proteins.py                          # L = 50, 101, 202
    .venv/bin/python benchmarks/bench_proteins.py --L 30 53 --M 300 --iterations 5 --steps 50

The data: the shipped PF13354 alignment gap-filtered with the ``proteins`` schema defaults, its
first L columns, and ``M`` training sequences plus ``round(M * held_out / (1 - held_out))``
held-out ones drawn without replacement by ``numpy.random.default_rng(0)`` (the same rows at
every L), weighted by ``sequence_weights`` at ``proteins.identity`` within the training and
within the held-out rows, as the workflow's ``protein_data`` stage weighs a split (the held-out
rows are not filtered by identity here: they only time the evaluation).

Each model runs ``fitting.fit_model`` (the work of the ``protein_fit`` stage: the fit, the held-out
and training losses, the contact scores) in its own subprocess, with the ``proteins`` schema
defaults except a fixed budget: ``--iterations`` L-BFGS iterations for the coupling models
(``proteins.max_iter``, with ``grad_tol = 0`` so that no fit stops early and ``restarts = 1``) and
``--steps`` Adam steps for the transformers (``proteins.transformer.steps``, the held-out rows
standing in for the validation rows, evaluated every tenth of the steps with a window that never
stops the run). The subprocess times the loop of each fit apart from its compilation: for the
coupling models, the L-BFGS call less the same call stopped at zero iterations (its compiled
program's first objective evaluation; run once before to compile), over the iterations done
(``s_per_iteration``; ``evaluations`` counts the objective evaluations, the first and the line
searches'); for the transformers, the Adam steps between the run's first and last progress
callback (every tenth of the steps), over the steps between them. ``wall_s`` is the whole
``fit_model`` call (compilation, the zero-iteration calls of the coupling models, fit and
evaluation), ``loop_s`` the timed part. ``peak_rss_mb`` is the subprocess's own peak resident set
size (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` at its end: host memory, whatever the device),
``device_peak_mb`` the device's peak bytes in use where JAX reports it (accelerators). The
baseline, per L, is a subprocess that imports the same modules, loads and weighs the same data and
fits nothing, its ``wall_s`` the whole subprocess's (start, imports, reading, gap filter and
weights); ``rss_per_param`` is the peak RSS in bytes per parameter.

Prints a table and appends its rows (the baselines as model ``baseline``) to
``benchmarks/results/bench_proteins.csv``; then per model the growth exponents, between the
smallest and largest L, of the peak memory above the baseline and of the parameter count
(``log(x(L2) / x(L1)) / log(L2 / L1)``; memory not above the baseline reads as an exponent of
minus infinity at the largest L, infinity at the smallest L only), and PASS when the memory's
exponent is at most the parameter count's plus 0.1 ("memory grows no faster than the parameter
count"; not applicable to the transformers, whose parameters do not depend on L).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
from record import Recorder, default_csv

from workflow_lib.core.config import load_config
from workflow_lib.proteins import factored_form, models, transformer
from workflow_lib.proteins.alignment import filter_gaps, read_alignment
from workflow_lib.proteins.fitting import fit_model
from workflow_lib.proteins.run_names import TRANSFORMERS
from workflow_lib.proteins.weights import sequence_weights
from workflow_lib.studies.proteins.settings import fit_settings

ROOT = Path(__file__).resolve().parents[1]
ALIGNMENT = ROOT / "data" / "proteins" / "PF13354" / "PF13354.fasta.gz"
MODELS = ("plmdca", "factored-H1", "factored-H4", "factored-H16", "vanilla1", "vanilla3")
SLACK = 0.1  # PASS: exponent of memory <= exponent of parameters + SLACK
COLUMNS = ("model", "L", "M", "M_test", "n_params", "iterations", "steps", "evaluations",
           "wall_s", "loop_s", "s_per_iteration", "peak_rss_mb", "baseline_rss_mb", "rss_per_param",
           "device_peak_mb")  # fmt: skip


def run_name(name: str) -> str:
    """``name`` if it is a run name of the protein study (``--models``), else argparse's error."""
    if name in ("plmdca", *TRANSFORMERS) or factored_form(name) is not None:
        return name
    raise argparse.ArgumentTypeError(f"not a protein model: {name!r} (factored-H4, "
                                     "factored_softmax-H32, factored_lowrank-H64, plmdca, ...)")


def load_data(L: int, M: int, cfg: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(seqs (M + n, L) int32, weights (M + n,), test (M + n,) bool)``: the first ``L``
    gap-filtered columns of PF13354, ``M`` training and ``n`` held-out rows (module docstring)."""
    aln = read_alignment(ALIGNMENT)
    seqs, _, _ = filter_gaps(aln.seqs, cfg["max_gap_sequence"], cfg["max_gap_column"])
    if not 2 <= L <= seqs.shape[1]:
        raise SystemExit(f"L = {L}: PF13354 has {seqs.shape[1]} columns after the gap filter")
    n_test = max(1, round(M * cfg["held_out"] / (1 - cfg["held_out"])))
    if M + n_test > len(seqs):
        raise SystemExit(f"M = {M} needs {M + n_test} sequences with the held-out ones; PF13354 "
                         f"has {len(seqs)} after the gap filter")  # fmt: skip
    rows = np.random.default_rng(0).permutation(len(seqs))[: M + n_test]
    seqs = np.ascontiguousarray(seqs[rows, :L], np.int32)
    test = np.arange(M + n_test) >= M
    weights = np.concatenate([sequence_weights(part, cfg["identity"])
                              for part in (seqs[:M], seqs[M:])])  # fmt: skip
    return seqs, weights, test


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def device_peak_mb() -> float | None:
    """The first device's peak bytes in use in MB, where JAX reports it (not on CPU)."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats["peak_bytes_in_use"] / 1e6 if "peak_bytes_in_use" in stats else None


def timed_minimize(timing: dict) -> Callable:
    """``models.minimize`` (one start) with its loop timed into ``timing``: ``loop_s``, the fit's
    wall time less that of the same call stopped at zero iterations (the compiled L-BFGS program
    is one ``jit``; its loop cannot be timed from inside), ``evaluations`` (``Result.nfev``: the
    first evaluation and the line searches'), ``iterations``."""
    original = models.minimize

    def minimize(objective: Callable, starts: list, data, max_iter: int, grad_tol: float,
                 **kwargs) -> list:  # fmt: skip
        if len(starts) != 1:
            raise ValueError(f"timed_minimize times one start, not {len(starts)}")
        original(objective, starts, data, 0, grad_tol, **kwargs)  # compiles
        start = time.perf_counter()
        original(objective, starts, data, 0, grad_tol, **kwargs)  # the first evaluation
        baseline = time.perf_counter() - start
        start = time.perf_counter()
        runs = original(objective, starts, data, max_iter, grad_tol, **kwargs)
        timing.update(loop_s=time.perf_counter() - start - baseline,
                      evaluations=runs[0].nfev, iterations=runs[0].nit)  # fmt: skip
        return runs

    return minimize


def timed_progress(timing: dict) -> type[transformer.StepProgress]:
    """The transformers' progress reporter with the step and time of each call recorded into
    ``timing["stamps"]``."""
    timing["stamps"] = []

    class TimedProgress(transformer.StepProgress):
        def __call__(self, step, *losses) -> None:
            timing["stamps"].append((int(step), time.perf_counter()))
            super().__call__(step, *losses)

    return TimedProgress


def child(name: str, L: int, M: int, iterations: int, steps: int, out: Path) -> None:
    """Run model ``name`` (or only load the data: ``baseline``) and write its figures to
    ``out`` as JSON."""
    cfg = load_config({})["proteins"]
    seqs, weights, test = load_data(L, M, cfg)
    result: dict = {"M_test": int(test.sum())}
    if name != "baseline":
        timing: dict = {}
        is_transformer = name in TRANSFORMERS
        if is_transformer:
            cfg["transformer"].update(steps=steps, eval_every=max(1, steps // 10), window=10)
            transformer.StepProgress = timed_progress(timing)
        else:
            cfg.update(max_iter=iterations, grad_tol=0.0, restarts=1)
            models.minimize = timed_minimize(timing)
        key = jax.random.fold_in(jax.random.key(0), zlib.crc32(name.encode()))
        start = time.perf_counter()
        res = fit_model(name, fit_settings(name, cfg), (seqs[~test], weights[~test]),
                        (seqs[test], weights[test]), seqs[test], key)
        wall = time.perf_counter() - start
        if is_transformer:
            (s0, t0), (s1, t1) = timing["stamps"][0], timing["stamps"][-1]
            done, loop = int(res.metrics["steps"]), t1 - t0
            per = loop / (s1 - s0) if s1 > s0 else None
        else:
            done, loop = timing["iterations"], timing["loop_s"]
            per = loop / done if done else None
        result |= {"n_params": int(res.metrics["n_params"]), "done": done, "wall_s": wall,
                   "loop_s": loop, "s_per_iteration": per,
                   "evaluations": timing.get("evaluations"),
                   "device_peak_mb": device_peak_mb()}  # fmt: skip
    result["peak_rss_mb"] = peak_rss_mb()
    out.write_text(json.dumps(result))


def run_child(name: str, L: int, args: argparse.Namespace) -> dict | None:
    """Run ``child`` in a fresh interpreter; its figures, or None (with its output) on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, __file__, "--child", name, "--L", str(L), "--M", str(args.M),
               "--iterations", str(args.iterations), "--steps", str(args.steps), "--out",
               str(out)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0 or not out.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            print(f"  {name} at L = {L} FAILED (exit {proc.returncode}):\n{tail}", flush=True)
            return None
        return json.loads(out.read_text())


def exponent(lo: float, hi: float, L_lo: int, L_hi: int) -> float:
    """``log(hi / lo) / log(L_hi / L_lo)``: infinite when only ``hi`` is positive, minus
    infinite when ``hi`` is not (nothing above the baseline at the largest L)."""
    if hi <= 0:
        return -math.inf
    if lo <= 0:
        return math.inf
    return math.log(hi / lo) / math.log(L_hi / L_lo)


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else (
        format(value, spec))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--L", type=int, nargs="+", default=[50, 101, 202],
                    help="alignment lengths: the first L gap-filtered columns of PF13354")
    ap.add_argument("--M", type=int, default=2000, help="training sequences")
    ap.add_argument("--models", nargs="+", default=list(MODELS), type=run_name,
                    help="run names of the study (default: %(default)s), any factored form and "
                    "head count: factored[_softmax|_lowrank]-H<h>, plmdca, vanilla1, vanilla3")
    ap.add_argument("--iterations", type=int, default=20,
                    help="L-BFGS iterations of the coupling models (proteins.max_iter)")
    ap.add_argument("--steps", type=int, default=200,
                    help="Adam steps of the transformers (proteins.transformer.steps)")
    ap.add_argument("--csv", default=str(default_csv(__file__)))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.L[0], args.M, args.iterations, args.steps, Path(args.out))
        return
    if args.iterations < 1 or args.steps < 20:
        raise SystemExit("--iterations must be at least 1 and --steps at least 20 (two progress "
                         "callbacks time the steps)")  # fmt: skip

    Ls = sorted(set(args.L))
    rec = Recorder(args.csv, COLUMNS)
    total, done = len(Ls) * (len(args.models) + 1), 0
    baseline: dict[int, float] = {}
    rows: list[dict] = []
    print(f"PF13354, M = {args.M} training sequences, {args.iterations} L-BFGS iterations, "
          f"{args.steps} Adam steps; {os.cpu_count()} CPUs, JAX on {jax.devices()[0]}",
          flush=True)  # fmt: skip
    for L in Ls:
        for name in ("baseline", *args.models):
            start = time.perf_counter()
            res = run_child(name, L, args)
            done += 1
            if res is None:
                continue
            if name == "baseline":
                baseline[L] = res["peak_rss_mb"]
                wall = time.perf_counter() - start
                row = {"model": name, "L": L, "M": args.M, "M_test": res["M_test"],
                       "wall_s": wall, "peak_rss_mb": res["peak_rss_mb"],
                       "baseline_rss_mb": res["peak_rss_mb"]}  # fmt: skip
                print(f"[{done}/{total}] L = {L} baseline: peak RSS {res['peak_rss_mb']:.0f} MB "
                      f"({wall:.0f} s)", flush=True)
            else:
                transformer = name in TRANSFORMERS
                row = {"model": name, "L": L, "M": args.M, "M_test": res["M_test"],
                       "n_params": res["n_params"],
                       "steps" if transformer else "iterations": res["done"],
                       "evaluations": res["evaluations"], "wall_s": res["wall_s"],
                       "loop_s": res["loop_s"],
                       "s_per_iteration": res["s_per_iteration"],
                       "peak_rss_mb": res["peak_rss_mb"], "baseline_rss_mb": baseline.get(L),
                       "rss_per_param": res["peak_rss_mb"] * 1e6 / res["n_params"],
                       "device_peak_mb": res["device_peak_mb"]}  # fmt: skip
                print(f"[{done}/{total}] L = {L} {name}: {res['done']} "
                      f"{'steps' if transformer else 'iterations'} in {res['wall_s']:.1f} s, "
                      f"{_fmt(res['s_per_iteration'], '.3g')} s each, peak RSS "
                      f"{res['peak_rss_mb']:.0f} MB ({time.perf_counter() - start:.0f} s)",
                      flush=True)  # fmt: skip
            rec.add(**row)
            rows.append(row)

    print("\n| model | L | M | params | iterations/steps | wall s | s per iteration/step | "
          "peak RSS MB | above baseline MB | RSS bytes per param |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if row["model"] == "baseline":
            continue
        above = row["peak_rss_mb"] - row["baseline_rss_mb"] if row["baseline_rss_mb"] else None
        print(f"| {row['model']} | {row['L']} | {row['M']} | {row['n_params']} | "
              f"{row.get('iterations', row.get('steps'))} | {row['wall_s']:.2f} | "
              f"{_fmt(row['s_per_iteration'], '.3g')} | {row['peak_rss_mb']:.0f} | "
              f"{_fmt(above, '.0f')} | {row['rss_per_param']:.3g} |")
    print(f"baseline peak RSS (imports, data, weights): "
          f"{', '.join(f'L = {L}: {mb:.0f} MB' for L, mb in baseline.items())}")

    if len(Ls) < 2:
        return
    L_lo, L_hi = Ls[0], Ls[-1]
    print(f"\ngrowth exponents between L = {L_lo} and L = {L_hi} (memory: peak RSS above the "
          "baseline of the same L)")
    for name in args.models:
        got = {r["L"]: r for r in rows if r["model"] == name}
        if L_lo not in got or L_hi not in got or L_lo not in baseline or L_hi not in baseline:
            print(f"{name}: missing runs, no exponent")
            continue
        lo, hi = got[L_lo], got[L_hi]
        e_mem = exponent(lo["peak_rss_mb"] - baseline[L_lo], hi["peak_rss_mb"] - baseline[L_hi],
                         L_lo, L_hi)  # fmt: skip
        e_par = exponent(lo["n_params"], hi["n_params"], L_lo, L_hi)
        if e_par < SLACK:  # the transformers: sinusoidal positions, no parameter per site
            verdict = ("n/a (the parameters do not depend on L; memory grows with the "
                       "activations, attention maps of L x L per layer)")
        else:
            verdict = "PASS" if e_mem <= e_par + SLACK else "FAIL"
        print(f"{name}: memory exponent {e_mem:.2f}, parameter exponent "
              f"{e_par:.2f}: memory grows no faster than the parameter count: {verdict}")


if __name__ == "__main__":
    main()
