"""The README's test command as a newcomer meets it: ``python -m pytest`` in this checkout with
an empty JAX cache.

    .venv/bin/python benchmarks/bench_tests.py                    # the whole suite
    .venv/bin/python benchmarks/bench_tests.py -- -m "not slow"   # the fast loop

Runs ``python -m pytest`` with the arguments after ``--`` (none: the README's command) from the
repository root, with ``JAX_CACHE_DIR`` an empty folder, so that every program compiles as on a
first run. Each row: the pytest arguments (``pytest_args``, empty for the whole suite), the CPUs
this process may run on (``cpus_usable``), the command's wall time, its CPU time and that of every
process it started (``cpu_s``: user and system time of the children), and the counts of pytest's
summary line. A run whose tests fail records no row. Rows go to
``benchmarks/results/bench_tests.csv``; the README's first screen reads them
(``workflow_lib.pages.landing``).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import Recorder, default_csv

REPO = Path(__file__).resolve().parents[1]
OUTCOMES = ("passed", "failed", "skipped", "errors")
COLUMNS = ("pytest_args", "cpus_usable", "wall_s", "cpu_s", *OUTCOMES)


def outcomes(summary: str) -> dict[str, int]:
    """The counts in pytest's summary line (``=== 12 passed, 1 skipped in 3.4s ===``), each of
    ``OUTCOMES`` (an ``error`` counted as ``errors``), 0 where the line has none."""
    found = {"errors" if word.startswith("error") else word: int(n)
             for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", summary)}
    return {outcome: found.get(outcome, 0) for outcome in OUTCOMES}


def run_tests(args: list[str]) -> dict:
    """``python -m pytest args`` from the repository root with an empty JAX cache: its wall and
    CPU time and the counts of its summary line; stops with the output's tail if a test
    fails."""
    with tempfile.TemporaryDirectory(prefix="bench_tests_") as cache:
        env = {**os.environ, "JAX_CACHE_DIR": cache}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, env=env,
                             capture_output=True, text=True)  # fmt: skip
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = run.stdout + run.stderr
    if run.returncode:
        sys.exit(f"pytest failed (exit status {run.returncode}):\n{output[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in output.splitlines() if line.strip()]
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            **outcomes(lines[-1] if lines else "")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=default_csv(__file__),
                        help="CSV file the row is appended to")
    parser.add_argument("pytest_args", nargs="*",
                        help="arguments after -- go to pytest (none: the whole suite)")
    args = parser.parse_args(argv)
    rec = Recorder(args.csv, COLUMNS)
    row = run_tests(args.pytest_args)
    rec.add(pytest_args=shlex.join(args.pytest_args), cpus_usable=len(os.sched_getaffinity(0)),
            **row)
    print(f"pytest {shlex.join(args.pytest_args)}: {row['wall_s']} s wall, {row['cpu_s']} s CPU, "
          + ", ".join(f"{row[k]} {k}" for k in OUTCOMES), flush=True)


if __name__ == "__main__":
    main()
