"""A job's CPU time, measured by the job itself at its end (``python -m workflow_lib stage``
writes it as its log's last line) and read back from the log by the run's costs
(``pages.job_costs``). Snakemake's ``benchmark:`` samples a job's CPU time every 0.5 s for 15 s,
then every 30 s, so it misses what a job spends after its last sample: up to 30 s a job."""

from __future__ import annotations

import re
import resource
from pathlib import Path

LINE = "job CPU time {:.2f} s"
PATTERN = re.compile(r"job CPU time ([0-9.]+) s$")
TAIL_BYTES = 4096


def seconds_so_far() -> float:
    """The CPU time this process and its children have used so far: user + system, every
    thread."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def from_log(log: Path) -> float | None:
    """The CPU time a finished job wrote as its log's last line; ``None`` when the log is
    missing or does not end with it (a job run by a version that did not write it)."""
    if not log.is_file():
        return None
    with log.open("rb") as f:
        f.seek(max(0, f.seek(0, 2) - TAIL_BYTES))
        lines = f.read().decode(errors="replace").rstrip().splitlines()
    found = PATTERN.search(lines[-1]) if lines else None
    return float(found.group(1)) if found else None
