"""Helpers for tests that run the real workflow with Snakemake on tiny configs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT

TINY = {
    "realisations": 2,
    "compute": {"threads": 1},
    "potts": {"L": 5, "C": 3, "beta": 0.5},
    "sampling": {"n_train": 200, "n_test": 100, "burn_in": 50, "sweeps_between": 2, "blocks": 2},
    "sample_complexity": {"M": [2, 10, 50]},
    "omniglot": {"enabled": False},
}


def write_config(tmp: Path, overrides: dict) -> Path:
    path = tmp / "tiny.yaml"
    path.write_text(yaml.safe_dump({**overrides, "results": str(tmp / "results")}))
    return path


def snakemake(tmp: Path, config: Path, *args: str, timeout: int = 600):
    """Run the repository's workflow in ``tmp`` with ``config``; returns the CompletedProcess."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp),
           "--configfile", str(config), "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
