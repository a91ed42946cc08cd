"""Tiny end-to-end Snakemake runs of the couplings and sample rules."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.workflow_runs import TINY, snakemake, snakemake_in, write_config
from workflow_lib.artefacts import POTTS_SAMPLES, read_artefact

pytestmark = pytest.mark.slow


def test_sampling_rules_end_to_end_and_cached(tiny_run):
    """The couplings and sample rules of the session's shared tiny run (``tests/conftest.py``)."""
    targets = [f"results/potts/r{r}/samples.h5" for r in (0, 1)]
    first = read_artefact(tiny_run / targets[0], POTTS_SAMPLES, required=("train", "test", "J"))
    second = read_artefact(tiny_run / targets[1], POTTS_SAMPLES)
    assert first["train"].shape == (200, 5) and first["test"].shape == (100, 5)
    assert first.attrs["beta"] == 0.5 and json.loads(first.attrs["seeds"])["realisation"] == 0
    assert not np.array_equal(first["J"], second["J"])  # realisations differ
    assert (tiny_run / "results/logs/potts/r0/samples.log").exists()
    assert (tiny_run / "results/benchmarks/potts/r0/samples.tsv").exists()
    again = snakemake_in(tiny_run, *targets, "-n")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_bad_config_stops_before_any_job(tmp_path):
    config = write_config(tmp_path, {**TINY, "potts": {"L": 1, "C": 3}})
    run = snakemake(tmp_path, config, "-n")
    assert run.returncode != 0
    lines = [ln for ln in run.stderr.splitlines() if "config error" in ln]
    assert lines == ["config error: potts.L = 1: must be integer >= 2 and <= 1000"]
    assert "Traceback" not in run.stderr


def test_same_seed_gives_identical_datasets(tmp_path):
    """Running the sample stage twice with the same job gives bit-identical datasets."""
    def stage(name, out):
        job = {"input": inputs.get(name, {}), "output": out, "threads": 1,
               "params": {"seed": 4, "realisation": 1, "potts": TINY["potts"] | {"U": "gaussian"},
                          "sampling": TINY["sampling"] | {"protocol": "single_chain"},
                          "beta_tuning": {}}}
        cmd = [sys.executable, "-m", "workflow_lib", "stage", name, "--job", json.dumps(job)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)

    inputs = {"sample": {"couplings": str(tmp_path / "c.h5")}}
    stage("couplings", {"couplings": str(tmp_path / "c.h5")})
    stage("sample", {"samples": str(tmp_path / "a.h5")})
    stage("sample", {"samples": str(tmp_path / "b.h5")})
    a, b = read_artefact(tmp_path / "a.h5"), read_artefact(tmp_path / "b.h5")
    assert a.data.keys() == b.data.keys()
    for name in a.data:
        np.testing.assert_array_equal(a[name], b[name])
    assert a.attrs["config_digest"] == b.attrs["config_digest"]
