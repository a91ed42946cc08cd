"""What a job process pays before it computes: the wall time of importing each module a stage
imports first, in a fresh interpreter, median of ``--repeats`` runs.

    .venv/bin/python benchmarks/bench_imports.py

Every Snakemake job is a new ``python -m workflow_lib stage`` process, so an import's time is
paid once per job (67 jobs in the test suite's tiny run, hundreds in a paper preset). Rows:
``module``, its version where it has one, ``median_s`` and ``min_s`` over the repeats, and the
``interpreter`` row (``python -c pass``) as the baseline; ``ratio`` is each median over the
baseline's. Rows go to ``benchmarks/results/bench_imports.csv``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from record import Recorder, default_csv

MODULES = ("ml_dtypes", "numpy", "jax", "workflow_lib.studies.potts_paper.stages_fits",
           "workflow_lib.studies.proteins.stages", "workflow_lib.pages.figure")
COLUMNS = ("module", "version", "repeats", "median_s", "min_s", "ratio")


def timed(statement: str, repeats: int) -> list[float]:
    """Wall seconds of ``python -c statement`` in a fresh interpreter, ``repeats`` times."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        times.append(time.perf_counter() - start)
    return times


def version(module: str) -> str:
    out = subprocess.run([sys.executable, "-c", f"import {module} as m; "
                          "print(getattr(m, '__version__', ''))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--csv", default=str(default_csv(__file__)))
    args = parser.parse_args()
    rec = Recorder(args.csv, COLUMNS)
    base = statistics.median(timed("pass", args.repeats))
    rows = [("interpreter", "", [base])]
    rows += [(m, version(m), timed(f"import {m}", args.repeats)) for m in MODULES]
    for module, ver, times in rows:
        median = statistics.median(times)
        rec.add(module=module, version=ver, repeats=args.repeats, median_s=round(median, 4),
                min_s=round(min(times), 4), ratio=round(median / base, 1))
        print(f"{module:50s} {ver:10s} {median:7.3f} s  ({median / base:.0f}x the interpreter)")


if __name__ == "__main__":
    main()
