"""The README's main command as a newcomer meets it: a fresh clone, an empty JAX cache.

    .venv/bin/python benchmarks/bench_quick.py                     # this checkout's HEAD
    .venv/bin/python benchmarks/bench_quick.py --commits 0c25168 HEAD --cores 2

For each commit, in the order given (so that the commits of one run share the machine's state):
a clone of this repository at the commit in a temporary folder, then ``snakemake --cores N`` in
it (the quick preset, ``config.yaml``) twice: ``cold``, with ``JAX_CACHE_DIR`` an empty folder,
and ``warm``, into a second results folder with the cache the cold run filled. The package is
imported from the clone (``PYTHONPATH``), its dependencies from this interpreter's environment.
Each row: the CPUs this process may run on (``cpus_usable``: ``taskset -c 0`` gives one), the
wall time of the snakemake command, the jobs, their summed wall time and CPU time
(``workflow_lib.pages.results.job_costs``: Snakemake's ``benchmark:`` and each job's own CPU
measurement; a commit whose jobs do not measure it gives Snakemake's sampled CPU time, which
misses up to 30 s of each job), the longest job, and on the cold row the share of the
job time that the warm run did not spend (``compile_share``: compiling programs, which the warm
run reads from the cache). Rows go to ``benchmarks/results/bench_quick.csv``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import Recorder, default_csv

from workflow_lib.pages.results import job_costs

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("tested_commit", "phase", "cores", "cpus_usable", "wall_s", "jobs", "job_s", "job_cpu_s",
           "longest_job", "longest_job_s", "compile_share")


def run_once(clone: Path, results: Path, cache: Path, cores: int) -> dict:
    """``snakemake --cores cores`` in ``clone`` into ``results`` with JAX cache ``cache``: wall
    time and the jobs' times; stops with the log's tail if it fails."""
    env = {**os.environ, "JAX_CACHE_DIR": str(cache), "PYTHONPATH": str(clone),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    env.pop("SNAKEMAKE_PROFILE", None)
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(cores), "--config",
                          f"results={results}"], cwd=clone, env=env, capture_output=True,
                         text=True)  # fmt: skip
    wall = time.perf_counter() - start
    if run.returncode:
        sys.exit(f"snakemake failed in {clone}:\n{(run.stdout + run.stderr)[-3000:]}")
    costs = job_costs(results)
    longest = costs.loc[costs["wall_s"].idxmax()]
    return {"wall_s": round(wall, 1), "jobs": len(costs),
            "job_s": round(float(costs["wall_s"].sum()), 1),
            "job_cpu_s": round(float(costs["cpu_s"].sum()), 1),
            "longest_job": longest["job"], "longest_job_s": round(float(longest["wall_s"]), 1)}


def bench(commit: str, cores: int, rec: Recorder) -> None:
    """The cold and warm rows of ``commit``."""
    with tempfile.TemporaryDirectory(prefix="bench_quick_") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(REPO),
                        str(clone)], check=True)  # fmt: skip
        subprocess.run(["git", "checkout", "--quiet", commit], cwd=clone, check=True)
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True,
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
        cache = Path(tmp) / "jax_cache"
        cold = run_once(clone, Path(tmp) / "cold", cache, cores)
        warm = run_once(clone, Path(tmp) / "warm", cache, cores)
        share = 1 - warm["job_s"] / cold["job_s"]
        for phase, row, extra in (("cold", cold, {"compile_share": round(share, 3)}),
                                  ("warm", warm, {})):
            rec.add(tested_commit=sha, phase=phase, cores=cores,
                    cpus_usable=len(os.sched_getaffinity(0)), **row, **extra)
            print(f"{sha} {phase}: {row['wall_s']} s wall, {row['jobs']} jobs, "
                  f"{row['job_s']} s of job time, longest {row['longest_job']} "
                  f"{row['longest_job_s']} s" + (f", compile share {share:.0%}" if extra else ""),
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", nargs="+", default=["HEAD"],
                        help="the commits timed, in this order (default: HEAD)")
    parser.add_argument("--cores", type=int, default=2, help="snakemake --cores (default 2)")
    parser.add_argument("--csv", type=Path, default=default_csv(__file__),
                        help="CSV file the rows are appended to")  # fmt: skip
    args = parser.parse_args()
    rec = Recorder(args.csv, COLUMNS)
    for commit in args.commits:
        bench(commit, args.cores, rec)


if __name__ == "__main__":
    main()
