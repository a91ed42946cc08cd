"""Append a benchmark's figures to a CSV file, each row with the command and host that gave it.

    rec = Recorder(path, ("L", "sampler", "mupd_per_s"))  # once per run
    rec.add(L=20, sampler="numpy", mupd_per_s=1.6)         # one row per measured configuration

The columns are the benchmark's own, then ``command`` (the command line of the run) and the host
columns ``HOST_COLUMNS``, read once per run so that every row of a run shares its ``date`` and
``commit``. A file written with other columns is rewritten with the union of both (old rows keep
their cells, new columns stay empty for them). ``docs/performance.md`` shows the latest run of
each file (``workflow_lib.pages.performance``).
"""

from __future__ import annotations

import csv
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from workflow_lib.core import host

RESULTS = Path(__file__).resolve().parent / "results"
HOST_COLUMNS = ("host_cpu", "cpus", "backend", "device", "jax_version", "commit", "date")
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")


def default_csv(script: str) -> Path:
    """``benchmarks/results/<script name>.csv`` for the script at path ``script``."""
    return RESULTS / f"{Path(script).stem}.csv"


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def host_columns() -> dict[str, str]:
    """The host columns: CPU model, CPU count, JAX's backend (``cpu``, ``gpu``), the kind of its
    first device (``cpu`` or the GPU's model name), JAX's version, commit, UTC date."""
    try:
        import jax

        from workflow_lib.core.backend import describe

        found = describe()
        jax_columns = {"backend": found["jax_backend"], "device": found["jax_device"],
                       "jax_version": jax.__version__}
    except ImportError:
        jax_columns = dict.fromkeys(("backend", "device", "jax_version"), "none")
    return {
        "host_cpu": host.cpu(),
        "cpus": str(os.cpu_count() or "unknown"),
        **jax_columns,
        "commit": _commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def command_line() -> str:
    """The command of this run as typed in the repository root: ``[VAR=value] <python> <script>
    <args>``, with the threading variables of ``THREAD_ENV`` that are set, the interpreter as
    ``python`` unless it lies inside the repository (``.venv/bin/python``)."""
    root = Path(__file__).resolve().parents[1]
    script, python = Path(sys.argv[0]).absolute(), Path(sys.executable).absolute()
    script = script.relative_to(root) if script.is_relative_to(root) else script
    python = python.relative_to(root) if python.is_relative_to(root) else Path("python")
    env = [f"{k}={os.environ[k]}" for k in THREAD_ENV if k in os.environ]
    return shlex.join([*env, str(python), str(script), *sys.argv[1:]])


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 1e6 else f"{value:.6g}"
    return str(value)


class Recorder:
    """Appends rows with ``columns``, ``command`` and the host columns to the CSV at ``path``."""

    def __init__(self, path: str | Path, columns: Sequence[str]) -> None:
        self.path = Path(path)
        self.columns = [*columns, "command", *HOST_COLUMNS]
        self.fixed = {"command": command_line(), **host_columns()}

    def add(self, **values: object) -> None:
        """Append one row; ``values`` are some of the benchmark's columns (the rest stay empty)."""
        unknown = (set(values) - set(self.columns)) | (set(values) & set(self.fixed))
        if unknown:
            raise KeyError(f"not columns of {self.path.name}: {sorted(unknown)}")
        row = {**{k: _cell(v) for k, v in values.items()}, **self.fixed}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header: list[str] = []
        if self.path.exists():
            with self.path.open(newline="", encoding="utf-8") as f:
                header = next(csv.reader(f), [])
        if header and set(self.columns) - set(header):  # columns missing: rewrite with the union
            with self.path.open(newline="", encoding="utf-8") as f:
                old = list(csv.DictReader(f))
            header = [*self.columns, *(c for c in header if c not in self.columns)]
            with self.path.open("w", newline="", encoding="utf-8") as f:
                writer = csv.DictWriter(f, header, restval="")
                writer.writeheader()
                writer.writerows(old)
        with self.path.open("a", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, header or self.columns, restval="")
            if not header:
                writer.writeheader()
            writer.writerow(row)
