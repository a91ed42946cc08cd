"""A preset's whole cost projected from a run of it at a few realisations, job by kind of job.

Run the preset's study for one realisation (or a few), one thread per job, then project:

    .venv/bin/snakemake --cores 2 --configfile config/paper.yaml my_r1.yaml
    .venv/bin/python benchmarks/bench_preset.py results/paper_r1 --preset config/paper.yaml

with ``my_r1.yaml`` setting ``realisations: 1``, ``results: results/paper_r1`` and
``compute: {threads: 1}``. Every job's wall time is the one Snakemake's ``benchmark:`` measured
for it in the run (``workflow_lib.pages.job_costs``). A kind of job (its path with the
realisation or chunk as ``r*``: ``train/factored/r*``) costs its run's wall time per
realisation times the preset's ``realisations``; a kind without a
realisation (the replica theory, the tables, the figures) costs what it cost once. The
``projection`` row sums the job time and spreads it over 2 and 8 one-thread jobs at a time
(never below the longest job). Rows hold the run's backend and device, read from its artefacts.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import h5py
import yaml
from record import Recorder, default_csv

from workflow_lib.config import load_config, merge
from workflow_lib.pages import cost_by_kind, job_costs
from workflow_lib.registry import STUDY_NAMES, studies

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("table", "study", "preset", "kind", "run_jobs", "run_seconds", "job_hours",
           "wall_hours_2_cores", "wall_hours_8_cores", "run_backend", "run_device")
REALISATION = re.compile(r"(?<![^/])r(\d+)(?:-(\d+))?(?![^/])")


def realisations_of(jobs: list[str]) -> set[int]:
    """The realisations that the job paths name (``r3``, or ``r0-9`` for a chunk of ten)."""
    found: set[int] = set()
    for job in jobs:
        for first, last in REALISATION.findall(job):
            found |= set(range(int(first), int(last or first) + 1))
    return found


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
    parser.add_argument("--study", default="potts_paper", choices=STUDY_NAMES,
                        help="the study whose jobs are read")
    parser.add_argument("--csv", type=Path, default=default_csv(__file__),
                        help="CSV file the rows are appended to")  # fmt: skip
    args = parser.parse_args()
    cfg = load_config(merge(*(yaml.safe_load(f.read_text()) or {}
                              for f in (REPO / "config.yaml", args.preset))))
    study = {s.name: s for s in studies()}[args.study]
    costs = job_costs(args.results, study)
    if costs.empty:
        raise SystemExit(f"no job benchmarks of study {args.study} under {args.results}/benchmarks")
    ran = len(realisations_of(costs["job"].tolist()))
    scale = cfg["realisations"] / max(ran, 1)
    backend, device = run_device(args.results)
    rec = Recorder(args.csv, COLUMNS)
    common = {"study": args.study, "preset": args.preset.name, "run_backend": backend,
              "run_device": device}
    print(f"run of {ran} realisation(s) on {backend} ({device}); {args.preset.name} has "
          f"{cfg['realisations']}")
    print(f"{'kind of job':<40}{'jobs':>6}{'run s':>10}{'preset job h':>14}")
    total, longest = 0.0, 0.0
    for row in cost_by_kind(costs).itertuples():
        hours = row.wall_s * (scale if "r*" in row.kind else 1) / 3600
        total, longest = total + hours, max(longest, row.longest_s / 3600)
        print(f"{row.kind:<40}{row.jobs:>6}{row.wall_s:>10.1f}{hours:>14.2f}")
        rec.add(table="per kind", kind=row.kind, run_jobs=row.jobs,
                run_seconds=round(row.wall_s, 1), job_hours=round(hours, 3), **common)
    wall = {n: max(total / n, longest) for n in (2, 8)}
    print(f"{args.preset.name}: {total:.1f} h of job time; wall {wall[2]:.1f} h on 2 cores, "
          f"{wall[8]:.1f} h on 8")
    rec.add(table="projection", job_hours=round(total, 2), wall_hours_2_cores=round(wall[2], 2),
            wall_hours_8_cores=round(wall[8], 2), **common)


if __name__ == "__main__":
    main()
