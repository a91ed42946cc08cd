"""A preset's whole cost projected from a run of it at a few realisations, job by kind of job.

Run the preset's study for one realisation (or a few), one thread per job, then project:

    .venv/bin/snakemake --cores 2 --configfile config/paper.yaml my_r1.yaml
    .venv/bin/python benchmarks/bench_preset.py results/paper_r1 --preset config/paper.yaml

with ``my_r1.yaml`` setting ``realisations: 1``, ``results: results/paper_r1`` and
``compute: {threads: 1}``. Every job's wall time is the one Snakemake's ``benchmark:`` measured
for it in the run (``workflow_lib.pages.results.job_costs``); the projection covers the jobs the run
holds. A kind of job (its path with the realisation or chunk as ``r*``: ``train/factored/r*``)
costs its run's wall time per realisation it covered times the preset's ``realisations``; a
kind without a realisation (the replica theory, the tables, the figures) costs what it cost
once. The jobs are projected as they ran: one thread each, with the run's realisations per
training job. The ``projection`` row sums the job time and spreads it over 2 and 8 such jobs
at a time: a lower bound on the wall time, which also waits on the jobs' dependencies (never
below the longest job). Each kind's row also holds its jobs' CPU time (``run_cpu_seconds``,
each job's own measurement, ``workflow_lib.pages.results.job_costs``): with one thread per job, the
time a core spent on them, which jobs sharing a core with other work do not inflate as they do
the wall time. Rows hold the run's backend and device, read from its artefacts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import h5py
from record import Recorder, default_csv

from workflow_lib.core.config import read_config_files
from workflow_lib.core.studies import names, studies
from workflow_lib.pages.results import cost_by_kind, job_costs

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("table", "study", "preset", "kind", "run_jobs", "run_realisations", "run_seconds",
           "run_cpu_seconds", "job_hours", "wall_hours_2_cores", "wall_hours_8_cores",
           "run_backend", "run_device")


def run_device(results: Path) -> tuple[str, str]:
    """The JAX backend and device recorded in the run's artefacts (the first that records one)."""
    for path in sorted(results.rglob("*.h5")):
        with h5py.File(path, "r") as f:
            if "jax_device" in f.attrs:
                return str(f.attrs["jax_backend"]), str(f.attrs["jax_device"])
    return "unknown", "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the results folder of the run")
    parser.add_argument("--preset", type=Path, default=REPO / "config" / "paper.yaml",
                        help="the preset projected (merged over config.yaml)")
    parser.add_argument("--study", default="potts_paper", choices=names(),
                        help="the study whose jobs are read")
    parser.add_argument("--csv", type=Path, default=default_csv(__file__),
                        help="CSV file the rows are appended to")  # fmt: skip
    args = parser.parse_args()
    cfg = read_config_files([REPO / "config.yaml", args.preset])
    study = {s.name: s for s in studies()}[args.study]
    costs = job_costs(args.results, study)
    if costs.empty:
        raise SystemExit(f"no job benchmarks of study {args.study} under {args.results}/benchmarks")
    backend, device = run_device(args.results)
    rec = Recorder(args.csv, COLUMNS)
    common = {"study": args.study, "preset": args.preset.name, "run_backend": backend,
              "run_device": device}
    print(f"run on {backend} ({device}); {args.preset.name} has {cfg['realisations']} "
          "realisations")
    print(f"{'kind of job':<40}{'jobs':>6}{'realisations':>14}{'run s':>10}{'CPU s':>10}"
          f"{'preset job h':>14}")
    total, longest = 0.0, 0.0
    for row in cost_by_kind(costs).itertuples():
        scale = cfg["realisations"] / row.realisations if row.realisations else 1
        hours = row.wall_s * scale / 3600
        total, longest = total + hours, max(longest, row.longest_s / 3600)
        print(f"{row.kind:<40}{row.jobs:>6}{row.realisations:>14}{row.wall_s:>10.1f}"
              f"{row.cpu_s:>10.1f}{hours:>14.2f}")
        rec.add(table="per kind", kind=row.kind, run_jobs=row.jobs,
                run_realisations=row.realisations, run_seconds=round(row.wall_s, 1),
                run_cpu_seconds=round(row.cpu_s, 1), job_hours=round(hours, 3), **common)
    wall = {n: max(total / n, longest) for n in (2, 8)}
    print(f"{args.preset.name}: {total:.1f} h of job time; wall at least {wall[2]:.1f} h on 2 "
          f"cores, {wall[8]:.1f} h on 8")
    rec.add(table="projection", job_hours=round(total, 2), wall_hours_2_cores=round(wall[2], 2),
            wall_hours_8_cores=round(wall[8], 2), **common)


if __name__ == "__main__":
    main()
