"""Jobs stopped mid-loop resume from their checkpoints (``workflow_lib.runtime.checkpoints``) when
Snakemake runs them again: a sample-complexity sweep and an Omniglot training job, each stopped
once by a real SIGTERM (it writes its checkpoint at the next boundary and exits with 143) and
once by a real SIGKILL (it keeps its last periodic checkpoint), write artefacts equal to those of
an uninterrupted run, every dataset and attribute but the creation time and timings; a checkpoint
of another config slice or code is not used, and ``--config checkpoints=False`` discards it,
each said in one log line. Runs in a copy of the repository, so that its code can be edited."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.workflow_runs import TINY, assert_same_artefact, copy_env, repo_copy, stage_process

pytestmark = pytest.mark.slow

SWEEP = "results/sample_complexity/r0.h5"
SWEEP_LOG = "results/logs/sample_complexity/r0.log"
SWEEP_CHECKPOINT = "results/.checkpoints/sample_complexity/r0.npz"
MODEL = "results/omniglot/model.h5"
MODEL_LOG = "results/logs/omniglot/model.log"
MODEL_CHECKPOINT = "results/.checkpoints/omniglot/model.npz"
# a checkpoint at every boundary, so that a SIGKILL finds one; fits of a few seconds per M
SWEEP_CONFIG = {**TINY, "results": "results", "checkpoint_every": 0,
                "sample_complexity": {"M": [2, 5, 10, 20], "restarts": 4,
                                      "max_iter": 2000}}
OMNIGLOT_CONFIG = {**TINY, "results": "results", "checkpoint_every": 0,
                   "omniglot": {"enabled": True, "n_train": 20, "n_validation": 20, "n_test": 20,
                                "network": {"width": 16, "head_dim": 8, "layers": 2, "heads": 2},
                                "training": {"steps": 3000, "batch": 16, "log_every": 250}}}


def workflow(tmp_path: Path, cfg: dict) -> Path:
    wd = repo_copy(tmp_path / "wf")
    (wd / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    return wd


def command(target: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", target, "--cores", "2", "--configfile",
            "tiny.yaml", *args]


def snakemake(wd: Path, target: str, *args: str) -> subprocess.CompletedProcess:
    run = subprocess.run(command(target, *args), cwd=wd, env=copy_env(wd), capture_output=True,
                         text=True, timeout=1200)
    return run


def completed(wd: Path, target: str, *args: str) -> str:
    """Run Snakemake to ``target``, asserting success; its output."""
    run = snakemake(wd, target, *args)
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    return run.stdout + run.stderr


def stopped(wd: Path, target: str, rule: str, log: str, ready: str, checkpoint: str,
            sig: signal.Signals) -> tuple[int, str]:
    """Run Snakemake to ``target`` and, once the job's ``log`` holds ``ready`` and its
    ``checkpoint`` exists, send ``sig`` to the stage process of the job of registered rule
    ``rule`` (``stage_process``); Snakemake's exit status and output."""
    with open(wd / ".test-stopped.txt", "w+") as out:
        proc = subprocess.Popen(command(target), cwd=wd, env=copy_env(wd), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 900
            while not ((wd / log).exists() and ready in (wd / log).read_text()
                       and (wd / checkpoint).exists()):
                assert proc.poll() is None, f"snakemake ended before {ready!r} in {log}"
                assert time.monotonic() < deadline, f"no {ready!r} in {log} within 900 s"
                time.sleep(0.05)
            os.kill(stage_process(wd, rule), sig)
            rc = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        return rc, out.read()


def assert_resumes(wd: Path, target: str, stage: str, log: str, ready: str, checkpoint: str,
                   reference: Path) -> None:
    """Stopped by SIGTERM, then (after a resumed run) by SIGKILL, the job resumes when Snakemake
    runs it again and writes the reference artefact; its checkpoint is then gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        (wd / target).unlink()
        rc, out = stopped(wd, target, stage, log, ready, checkpoint, sig)
        assert rc != 0, out[-3000:]
        assert not (wd / target).exists() and (wd / checkpoint).exists(), out[-3000:]
        if sig == signal.SIGTERM:  # its last line, which Snakemake shows too
            last = (wd / log).read_text().splitlines()[-1]
            assert f"SIGTERM: checkpoint {checkpoint} written at step " in last \
                or f"SIGTERM: checkpoint {checkpoint} written after " in last, last
            assert last.endswith("exiting with status 143 (run the job again to resume)")
            assert last in out
        completed(wd, target)
        text = (wd / log).read_text()
        assert f"checkpoint {checkpoint} (written " in text and "): resumed at step " in text, \
            text
        assert_same_artefact(wd / target, reference)
        assert not (wd / checkpoint).exists()


@pytest.mark.parametrize(("config", "target", "rule", "log", "marker", "checkpoint", "says"), [
    pytest.param(SWEEP_CONFIG, SWEEP, "potts_sample_complexity", SWEEP_LOG, "M = 5:",
                 SWEEP_CHECKPOINT, "", id="sweep"),
    pytest.param(OMNIGLOT_CONFIG, MODEL, "omniglot_train", MODEL_LOG, "step 500/3000",
                 MODEL_CHECKPOINT, " of 3000 of omniglot training; 0 finished parts kept",
                 id="omniglot"),
])
def test_a_stopped_job_resumes_to_the_uninterrupted_artefact(tmp_path, config, target, rule, log,
                                                             marker, checkpoint, says):
    wd = workflow(tmp_path, config)
    completed(wd, target)
    reference = shutil.copy(wd / target, tmp_path / "reference.h5")
    assert_resumes(wd, target, rule, log, marker, checkpoint, Path(reference))
    assert says in (wd / log).read_text()


def test_a_checkpoint_of_another_config_or_code_is_not_used_and_false_discards_it(tmp_path):
    """A sweep stopped by SIGTERM leaves checkpoint C. Put back before each run: with another
    ``sample_complexity.max_iter`` the job says C is of another config slice, with an edited L-BFGS
    module of another code, and each starts over; with ``checkpoints=False`` it discards C."""
    wd = workflow(tmp_path, SWEEP_CONFIG)
    checkpoint, kept = wd / SWEEP_CHECKPOINT, tmp_path / "kept.npz"
    rc, out = stopped(wd, SWEEP, "potts_sample_complexity", SWEEP_LOG, "M = 5:", SWEEP_CHECKPOINT,
                      signal.SIGTERM)
    assert rc != 0 and checkpoint.exists(), out[-3000:]
    shutil.copy(checkpoint, kept)

    def rerun(*args: str, cfg: dict = SWEEP_CONFIG) -> str:
        shutil.copy(kept, checkpoint)
        (wd / "tiny.yaml").write_text(yaml.safe_dump(cfg))
        completed(wd, SWEEP, *args)
        assert not checkpoint.exists()
        return (wd / SWEEP_LOG).read_text()

    sweep = SWEEP_CONFIG["sample_complexity"]
    text = rerun(cfg={**SWEEP_CONFIG, "sample_complexity": {**sweep, "max_iter": 1999}})
    assert f"checkpoint {SWEEP_CHECKPOINT} was written with another config slice (" in text
    assert "resumed" not in text
    lbfgs = wd / "workflow_lib/mlm/lbfgs.py"
    lbfgs.write_text(lbfgs.read_text() + "\n# an edit\n")
    text = rerun()
    assert f"checkpoint {SWEEP_CHECKPOINT} was written with another stage code (" in text
    assert "resumed" not in text
    lbfgs.write_text(lbfgs.read_text().removesuffix("\n# an edit\n"))
    text = rerun("--config", "checkpoints=False")
    assert f"checkpoint {SWEEP_CHECKPOINT} discarded (checkpoints: false)" in text
    assert "resumed" not in text
