"""Tiny end-to-end Snakemake runs of the couplings and sample rules."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.workflow_runs import TINY, snakemake, snakemake_in, write_config
from workflow_lib.core.artefacts import read_artefact
from workflow_lib.core.config import schema_defaults
from workflow_lib.potts.artefact import POTTS_SAMPLES

pytestmark = pytest.mark.slow

STAGES = "workflow_lib.studies.potts_paper.stages_data"  # its rules file names them


def test_sampling_rules_end_to_end_and_cached(tiny_run):
    """The couplings and sample rules of the session's shared tiny run (``tests/conftest.py``)."""
    targets = [f"results/potts/r{r}/samples.h5" for r in (0, 1)]
    first = read_artefact(tiny_run / targets[0], POTTS_SAMPLES, required=("train", "test", "J"))
    second = read_artefact(tiny_run / targets[1], POTTS_SAMPLES)
    assert first["train"].shape == (200, 5) and first["test"].shape == (100, 5)
    assert first.attrs["beta"] == 0.5 and json.loads(first.attrs["seeds"])["realisation"] == 0
    # held-out statistics, recomputed here from the sequences
    train = {row.tobytes() for row in first["train"]}
    shared = np.array([row.tobytes() in train for row in first["test"]])
    np.testing.assert_array_equal(first["test_in_train"], shared)
    assert first.attrs["test_in_train_fraction"] == shared.mean()
    assert first.attrs["n_distinct_train"] == len(train)
    assert first.attrs["n_distinct_test"] == len({row.tobytes() for row in first["test"]})
    assert not np.array_equal(first["J"], second["J"])  # realisations differ
    assert (tiny_run / "results/logs/potts/r0/samples.log").exists()
    assert (tiny_run / "results/benchmarks/potts/r0/samples.tsv").exists()
    again = snakemake_in(tiny_run, *targets, "-n")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_bad_config_stops_before_any_job(tmp_path):
    """Every problem of the config, one line each, then their count."""
    config = write_config(tmp_path, {**TINY, "potts": {"L": 1, "C": 3, "bta": 1.0}})
    run = snakemake(tmp_path, config, "-n")
    assert run.returncode != 0
    at = run.stderr.index("config error: ")
    assert run.stderr[at:].splitlines()[:3] == [
        "config error: unknown key potts.bta; allowed keys here: C, L, U, beta; did you mean "
        "potts.beta?",
        "config error: potts.L = 1: must be integer >= 2 and <= 1000",
        "2 errors in the config",
    ]
    assert "Traceback" not in run.stderr


def test_same_seed_gives_identical_datasets(tmp_path):
    """Running the sample stage twice with the same job gives bit-identical datasets."""
    def stage(name, out):
        job = {"input": inputs.get(name, {}), "output": out, "threads": 1,
               "params": {"seed": 4, "realisation": 1, "potts": TINY["potts"] | {"U": "gaussian"},
                          "sampling": schema_defaults("sampling") | TINY["sampling"]
                          | {"protocol": "single_chain"}, "beta_tuning": {}}}  # fmt: skip
        cmd = [sys.executable, "-m", "workflow_lib", "stage", f"{STAGES}:{name}", "--job",
               json.dumps(job)]
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


def _run_stage(name: str, job: dict) -> subprocess.CompletedProcess:
    """Stage ``name`` of the Potts paper's data stages on ``job``, as a rule runs it."""
    cmd = [sys.executable, "-m", "workflow_lib", "stage", f"{STAGES}:{name}", "--job",
           json.dumps(job)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


TUNED = {"L": 8, "C": 4, "U": "gaussian", "beta": None}
TUNED_SAMPLING = {"protocol": "single_chain", "n_train": 300, "n_test": 100, "burn_in": 100,
                  "sweeps_between": 10, "blocks": 1}
TUNING = {"target_hamming": 0.5, "beta_min": 0.1, "beta_max": 5.0, "grid_points": 6, "rounds": 3,
          "pilot_chains": 4, "pilot_samples": 30}


def _tuned_job(tmp_path, tuning: dict, seed: int = 1) -> dict:
    """Couplings of a tiny model, then the sample job at a tuned beta (config defaults filled)."""
    from workflow_lib.core.config import load_config

    cfg = load_config({"potts": TUNED, "sampling": TUNED_SAMPLING, "beta_tuning": tuning,
                       "sample_complexity": {"M": [10]}})
    params = {"seed": seed, "realisation": 0, "potts": cfg["potts"]}
    couplings = str(tmp_path / "c.h5")
    run = _run_stage("couplings", {"output": {"couplings": couplings}, "params": params})
    assert run.returncode == 0, run.stderr[-2000:]
    return {"input": {"couplings": couplings}, "output": {"samples": str(tmp_path / "s.h5")},
            "params": params | {"sampling": cfg["sampling"], "beta_tuning": cfg["beta_tuning"]}}


def test_tuned_sample_stage_records_tuning_and_inspect_shows_it(tmp_path):
    run = _run_stage("sample", _tuned_job(tmp_path, TUNING | {"resamples": 5}, seed=2))
    assert run.returncode == 0, run.stderr[-2000:]
    art = read_artefact(tmp_path / "s.h5", "potts-samples/1")
    assert abs(art.attrs["mean_hamming"] - 0.5) <= art.attrs["tolerance"] == 0.02
    last = art["attempts/round"] == art["attempts/round"][-1]
    assert art.attrs["mean_hamming"] in art["attempts/hamming"][last]
    assert art.attrs["beta"] in art["attempts/beta"][last]
    assert art["tuning/betas"].shape == art["tuning/hamming_sem"].shape == (3, 6)
    cmd = [sys.executable, "-m", "workflow_lib", "inspect", str(tmp_path / "s.h5")]
    shown = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0
    assert "tuning round 3" in shown.stdout and "attempt 1 (round 1): beta" in shown.stdout
    assert "(kept)" in shown.stdout
    assert "test in train" in shown.stdout


def test_a_missed_target_fails_the_stage_with_one_line_and_no_artefact(tmp_path):
    """An impossible tolerance: the stage stops with one line, no traceback, no artefact."""
    run = _run_stage("sample", _tuned_job(tmp_path, TUNING | {"tolerance": 1e-9, "resamples": 1}))
    assert run.returncode == 2
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "no data set within 1e-09 of" in errors[0], run.stderr[-2000:]
    assert "after 8 attempt(s) in 2 round(s)" in errors[0] and "beta_tuning." in errors[0]
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "s.h5").exists()
    assert not list(tmp_path.glob(".s.h5*"))
