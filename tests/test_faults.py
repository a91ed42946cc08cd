"""Fault tolerance of the workflow (any machine, no SLURM): a run killed mid-job resumes, a
corrupt input artefact gives a one-line error naming the file, editing code re-runs only the
rules that depend on it, and the SLURM profile resubmits failed jobs. The corrupt-input and
code-edit tests work on clones of the session's shared tiny run (``tests/conftest.py``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.test_slurm import PY, REPO, TARGETS, copy_workflow, run, snakemake_env, tiny_config
from tests.workflow_runs import clone, copy_env, registered
from workflow_lib.core.artefacts import ArtefactError, read_artefact

pytestmark = pytest.mark.slow

SAMPLES = "potts-samples/1"


def snakemake(wd: Path, *args: str, env: dict | None = None, timeout: float = 600):
    """``snakemake ARGS --cores 2 --configfile tiny.yaml`` in ``wd`` (targets go first in ARGS)."""
    return run([PY, "-m", "snakemake", *args, "--cores", "2", "--configfile", "tiny.yaml"],
               wd, env or snakemake_env(), timeout)


def planned(out: str) -> dict[str, int]:
    """Jobs per registered rule (a chunk's rule counted as the rule it is made from) from the
    "Job stats" table of a dry run ({} when nothing is to be done)."""
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1]
    jobs = {}
    for line in table.splitlines()[1:]:
        m = re.match(r"^(\w+)\s+(\d+)\s*$", line)
        if m and m.group(1) == "total":
            break
        if m:
            name = registered(m.group(1))
            jobs[name] = jobs.get(name, 0) + int(m.group(2))
    return jobs


def processes_under(path: Path) -> list[str]:
    """Command lines of live processes mentioning ``path`` (Linux /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmd:
            found.append(cmd)
    return found


def test_killed_run_leaves_no_complete_looking_output_and_resumes(tmp_path):
    wd = copy_workflow(tmp_path / "wf")
    cfg = tiny_config()
    cfg["sampling"].update(sweeps_between=12000, blocks=50)  # long enough to kill mid-run
    (wd / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    target = wd / TARGETS[0]
    log = wd / "results/logs/potts/r0/samples.log"
    cmd = [PY, "-m", "snakemake", TARGETS[0], "--cores", "2", "--configfile", "tiny.yaml"]
    with open(wd / ".test-killed.txt", "w+") as out:
        proc = subprocess.Popen(cmd, cwd=wd, env=snakemake_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            # wait until the sample job is sampling (its first progress line), then kill
            while not (log.exists() and "block 1/" in log.read_text()):
                if proc.poll() is not None:
                    out.seek(0)
                    pytest.fail(f"snakemake ended (rc {proc.returncode}) before the sample job "
                                f"started sampling:\n{out.read()[-5000:]}")
                if time.monotonic() > deadline:
                    pytest.fail("the sample job did not start sampling within 300 s")
                time.sleep(0.05)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # snakemake and its job: one process group
            proc.wait(timeout=30)

    deadline = time.monotonic() + 15
    while processes_under(wd) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_under(wd), processes_under(wd)
    assert "sampled" not in log.read_text(), "the job finished before it was killed"
    assert not target.exists(), "a killed job left a complete-looking samples.h5"
    leftovers = {p.name for p in target.parent.iterdir()} - {"couplings.h5"}
    assert all(name.startswith(".samples.h5.tmp-") for name in leftovers), leftovers

    # a SIGKILLed snakemake leaves its lock: unlock, then resume
    rc, out = run([*cmd, "--unlock"], wd, snakemake_env(), timeout=120)
    assert rc == 0, out[-3000:]
    rc, out = run([*cmd, "--rerun-incomplete"], wd, snakemake_env(), timeout=600)
    assert rc == 0, out[-5000:]
    assert "rule potts_couplings" not in out  # the finished couplings job is not redone
    art = read_artefact(target, SAMPLES, required=("train", "test"))
    assert art["train"].shape == (200, 5)


@pytest.mark.parametrize("damage", ["junk", "truncated"])
def test_corrupt_couplings_give_a_one_line_error_naming_the_file(tiny_run, tmp_path, damage):
    wd = clone(tiny_run, tmp_path / "wf")
    couplings = wd / "results/potts/r0/couplings.h5"
    data = couplings.read_bytes()
    couplings.write_bytes(b"this is not HDF5\n" * 64 if damage == "junk" else data[:1024])
    with pytest.raises(ArtefactError):
        read_artefact(couplings)
    rc, out = snakemake(wd, TARGETS[0], "--forcerun", "potts_sample_r0")
    assert rc != 0
    assert "Error in rule potts_sample_r0" in out
    log = (wd / "results/logs/potts/r0/samples.log").read_text()
    errors = [line for line in log.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, log
    assert "results/potts/r0/couplings.h5" in errors[0]
    assert re.search(r"not an HDF5 file|unreadable HDF5", errors[0]), errors[0]
    assert errors[0] in out.splitlines()  # on the terminal too, not only in the log
    assert "Traceback" not in log and "Traceback" not in out
    assert "exit status 2" in out  # the CLI's exit code for ArtefactError
    assert not (wd / TARGETS[0]).exists()  # the forced job's old output is gone, not stale


def test_editing_code_reruns_only_dependent_rules(tiny_run, tmp_path):
    wd = clone(tiny_run, tmp_path / "wf")
    env = copy_env(wd)
    where = subprocess.run([PY, "-c", "import workflow_lib; print(workflow_lib.__file__)"],
                           cwd=wd, env=env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()) == wd / "workflow_lib" / "__init__.py", where

    rc, out = snakemake(wd, *TARGETS, "--dry-run", env=env, timeout=300)
    assert rc == 0 and planned(out) == {}, out[-3000:]

    # each edit is cumulative: module edited -> jobs planned (both realisations)
    for module, jobs in (
        ("mlm/models.py", {}),  # not reached by the stages of these targets
        ("potts/gibbs.py", {"potts_sample": 2}),  # stage -> potts.protocols -> potts.gibbs
        ("potts/model.py", {"potts_couplings": 2, "potts_sample": 2}),  # reached by both stages
    ):
        with open(wd / "workflow_lib" / module, "a") as f:
            f.write("\n# an edit\n")
        rc, out = snakemake(wd, *TARGETS, "--dry-run", env=env, timeout=300)
        assert rc == 0, out[-3000:]
        assert planned(out) == jobs, (module, out[-3000:])


def test_editing_a_config_key_reruns_only_the_jobs_whose_slice_it_changes(tiny_run, tmp_path):
    wd = clone(tiny_run, tmp_path / "wf")
    env = copy_env(wd)
    rc, out = snakemake(wd, "proteins", "--dry-run", env=env, timeout=300)
    assert rc == 0 and planned(out) == {}, out[-3000:]
    config = yaml.safe_load((wd / "tiny.yaml").read_text())
    config["proteins"]["transformer"]["steps"] += 1  # the transformers' slice only
    (wd / "tiny.yaml").write_text(yaml.safe_dump(config))
    rc, out = snakemake(wd, "proteins", "--dry-run", env=env, timeout=300)
    assert rc == 0, out[-3000:]
    # the transformers' split fits and final fits, and what reads them
    assert planned(out) == {"protein_fit": 4, "protein_final_fit": 2, "protein_tables": 1,
                            "protein_claims": 1, "protein_contact_lists": 1,
                            "protein_figure": 2, "proteins": 1}, out[-3000:]


def test_slurm_profile_resubmits_failed_jobs():
    """A job that fails on SLURM (node failure, preemption) is retried; the real
    fail-then-succeed run is ``test_slurm.py::test_failed_job_is_retried``."""
    prof = yaml.safe_load((REPO / "slurm" / "config.yaml").read_text())
    assert prof["executor"] == "slurm"
    assert int(prof["retries"]) >= 1
