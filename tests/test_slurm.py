"""The SLURM profile (``slurm/config.yaml``): per-rule resources in a dry run (no cluster needed)
and real runs through a throwaway single-node SLURM on localhost (``tests/slurm_cluster.py``;
needs root; installs the Debian packages when missing, else the tests are skipped).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tests.slurm_cluster import ClusterError, slurm_unavailable, start_cluster
from tests.workflow_runs import TINY, assert_same_artefact, registered, stage_process
from workflow_lib.core.config import load_config, merge
from workflow_lib.core.errors import ConfigError
from workflow_lib.core.studies import rules

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
WORKFLOW = ["Snakefile", "rules", "envs", "config.yaml", "config", "slurm", "report", "data"]
TARGETS = ["results/potts/r0/samples.h5", "results/potts/r1/samples.h5"]
RUN_TIMEOUT = 15 * 60


GPU_MODEL = "tesla"


def tiny_config(threads: int = 1, gpu: bool = False, gpu_partition: str = "gpu") -> dict:
    """Seconds-long sampling: L=5, C=3, fixed beta (no tuning), 300 saved configurations, one
    job per realisation (as the paper presets), on top of the shared tiny preset
    (``tests/workflow_runs.py``) so later config checks stay met. With ``gpu``, the GPU jobs ask
    for a ``GPU_MODEL`` in ``gpu_partition``."""
    compute = {"threads": threads, "gpu": gpu, "realisations_per_job": 1}
    if gpu:
        compute |= {"gpu_model": GPU_MODEL, "gpu_partition": gpu_partition}
    return merge(TINY, {
        "seed": 0, "realisations": 2, "results": "results",
        "compute": compute,
        "potts": {"L": 5, "C": 3, "U": "gaussian", "beta": 0.5},
        "sampling": {"protocol": "single_chain", "n_train": 200, "n_test": 100, "burn_in": 100,
                     "sweeps_between": 5, "blocks": 2},
        "sample_complexity": {"M": [10, 50, 100]},  # at most sampling.n_train
    })


def copy_workflow(dest: Path) -> Path:
    """The workflow files (not workflow_lib: the installed package is used) in ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def snakemake_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.pop("SNAKEMAKE_PROFILE", None)
    env["PATH"] = os.pathsep.join([str(Path(PY).parent), env.get("PATH", "")])
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run ``cmd`` in its own process group; on timeout kill the whole group and fail."""
    with open(cwd / ".test-output.txt", "w+") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out.seek(0)
            pytest.fail(f"timed out after {timeout:.0f} s: {' '.join(cmd)}\n{out.read()[-5000:]}")
        out.seek(0)
        return rc, out.read()


def profile() -> dict:
    return yaml.safe_load((REPO / "slurm" / "config.yaml").read_text())


def dry_run_jobs(text: str) -> list[tuple[str, dict]]:
    """``[(rule, {"threads": int, "resources": {key: str}, "wildcards": {key: str}})]`` from a
    ``snakemake -n`` listing."""
    jobs: list[tuple[str, dict]] = []
    current: dict | None = None
    for line in text.splitlines():
        m = re.match(r"^(?:local)?rule (\w+):\s*$", line)
        if m:
            current = {"threads": 1, "resources": {}, "wildcards": {}}
            jobs.append((m.group(1), current))
            continue
        if current is None:
            continue
        m = re.match(r"^\s+(\w+): (.*)$", line)
        if not m:
            current = None
            continue
        key, value = m.groups()
        if key == "threads":
            current["threads"] = int(value)
        elif key in ("resources", "wildcards"):
            current[key] = dict(kv.split("=", 1) for kv in value.split(", "))
    return jobs


def chunk_of(rule: str) -> list[int]:
    """The realisations of a chunk's rule (``registry.chunk_rule``): of ``potts_train_r0_9``, 0
    to 9."""
    first, last = re.search(r"_r(\d+)(?:_(\d+))?$", rule).groups()
    return list(range(int(first), int(last or first) + 1))


def per_realisation_parts(name: str, cfg: dict) -> list[dict[str, str]]:
    """The wildcards, besides the realisation, of each part of a job of the per-realisation
    rule ``name`` (``rules/*.smk``: ``per_realisation(..., each=...)``)."""
    experiments, widths = cfg["paths"]["experiments"], cfg["paths"]["sample_widths"]
    return {"potts_plm": [{"kind": kind} for kind in cfg["plm"]["kinds"]],
            "paths_features": [{"experiment": e} for e in experiments],
            "paths_theory": [{"experiment": e} for e in experiments],
            "paths_sample": [{"experiment": e, "N": str(n)} for e in experiments for n in widths],
            }.get(name, [{}])


# --- profile and per-rule resources: no cluster needed ---------------------------------------


def test_profile_settings():
    prof = profile()
    assert prof["executor"] == "slurm"
    assert prof["retries"] >= 1, "failed SLURM jobs must be resubmitted"
    assert prof["latency-wait"] >= 10
    # the site's default partition and account; GPUs through the plugin's resources alone
    assert not prof.get("default-resources") and not prof.get("set-resources"), prof
    assert "slurm_extra" not in str(prof) and "gres" not in str(prof), prof
    # sacct is right on a real cluster; the squeue override belongs on the test command line
    assert "slurm-status-command" not in prof


def test_gpus_turn_on_from_the_command_line():
    """``--configfile config/gpu.yaml`` after a preset turns GPUs on; a nested ``--config`` value
    (text) is refused with a line that points there."""
    gpu = yaml.safe_load((REPO / "config" / "gpu.yaml").read_text())
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    assert load_config(merge(paper, gpu))["compute"]["gpu"] is True
    with pytest.raises(ConfigError, match="config/gpu.yaml"):
        load_config({"compute": {"gpu": "true"}})


@pytest.mark.slow
@pytest.mark.parametrize("gpu", [False, True], ids=["cpu", "gpu"])
def test_dry_run_resources(tmp_path, gpu):
    """Every job of the default, ``omniglot`` and ``proteins`` targets gets the runtime and
    memory its registry entry gives for the config and its wildcards, its threads (in the dry
    run too, as the profile's ``cores`` allows) and, with ``compute.gpu``, where the registry asks
    for one, a GPU of the configured model in the configured partition; every other job no
    partition (the site's default)."""
    pytest.importorskip("snakemake_executor_plugin_slurm")
    wd = copy_workflow(tmp_path / "wf")
    cfg = tiny_config(threads=3, gpu=gpu)
    (wd / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    rc, out = run(
        [PY, "-m", "snakemake", "all", "omniglot", "proteins", "--profile", "slurm", "--dry-run",
         "--configfile", "tiny.yaml"],
        wd, snakemake_env(), timeout=300,
    )
    assert rc == 0, out[-5000:]
    # the Snakefile's config.yaml, then tiny.yaml over it
    full = load_config(merge(yaml.safe_load((wd / "config.yaml").read_text()), cfg))
    registry = rules()
    jobs = [(rule, job) for rule, job in dry_run_jobs(out)
            if rule not in ("all", "omniglot", "proteins")]
    assert {registered(rule) for rule, _ in jobs} == set(registry), sorted(r for r, _ in jobs)
    for rule, job in jobs:
        entry, res = registry[registered(rule)], job["resources"]
        if rule == entry.name:  # one rule, its job's wildcards
            want = entry.resources(full, job["wildcards"], attempt=1)
        elif entry.side_by_side:  # a training chunk, side by side in one program
            want = entry.resources(full, job["wildcards"] | {"realisations": chunk_of(rule)}, 1)
        else:  # a per_realisation job: its parts' runtimes summed, their largest memory
            parts = [entry.resources(full, {"r": str(r), **part}, attempt=1)
                     for r in chunk_of(rule) for part in per_realisation_parts(entry.name, full)]
            want = {"runtime": sum(p["runtime"] for p in parts),
                    "mem_mb": max(p["mem_mb"] for p in parts)}
        assert res.get("runtime") == str(want["runtime"]), (rule, res, want)
        assert res.get("mem_mb") == str(want["mem_mb"]), (rule, res, want)
        assert job["threads"] == (3 if entry.threaded else 1), (rule, job)
        if entry.gpu and gpu:
            assert res.get("gpu") == "1" and res.get("gpu_model") == GPU_MODEL, (rule, res)
            assert res.get("slurm_partition") == "gpu", (rule, res)
        else:
            assert not {"gpu", "gpu_model", "gres", "slurm_partition"} & set(res), (rule, res)


def test_resources_grow_with_the_preset_and_the_attempt():
    quick = load_config(yaml.safe_load((REPO / "config.yaml").read_text()))
    paper = load_config(yaml.safe_load((REPO / "config" / "paper.yaml").read_text()))
    wildcards = {"r": "0", "realisations": [0], "arch": "factored", "kind": "full",
                 "panel": "fig2a", "experiment": "four_paths", "N": "10",
                 "family": "PF00014_2000", "model": "plmdca"}
    for name, entry in rules().items():
        first, second = (entry.resources(quick, wildcards, k) for k in (1, 2))
        assert first["runtime"] >= 1 and first["mem_mb"] >= 500, (name, first)
        assert second["runtime"] >= 2 * first["runtime"] - 1, (name, first, second)
        assert second["mem_mb"] >= 2 * first["mem_mb"] - 1, (name, first, second)
    for name in ("potts_sample", "potts_train", "potts_plm", "potts_sample_complexity",
                 "potts_replica_sims", "omniglot_train"):
        q, p = (rules()[name].resources(c, wildcards) for c in (quick, paper))
        assert p["runtime"] > q["runtime"], (name, q, p)


# --- a real local SLURM cluster ---------------------------------------------------------------


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    pytest.importorskip("snakemake_executor_plugin_slurm")
    reason = slurm_unavailable()
    if reason:
        pytest.skip(reason)
    try:
        c = start_cluster(tmp_path_factory.mktemp("slurm"), timeout=60)
    except ClusterError as exc:
        pytest.fail(f"local SLURM cluster did not start: {exc}")
    yield c
    c.stop()


def slurm_workflow(dest: Path) -> Path:
    """The workflow with the repository's profile as it is: the jobs go to the cluster's default
    partition."""
    return copy_workflow(dest)


def slurm_command(*args: str) -> list[str]:
    # squeue: the local cluster has no accounting (sacct); quick first status check for tests
    return [PY, "-m", "snakemake", *args, "--profile", "slurm",
            "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
            "--slurm-keep-successful-logs", "--verbose"]


def slurm_jobs(cluster, workdir: Path) -> list[dict]:
    """All jobs of ``workdir`` still known to slurmctld (finished ones for MinJobAge = 300 s)."""
    out = cluster.run("squeue", "--states=all", "--noheader", "--format=%i|%T|%k|%C|%Z")
    assert out.returncode == 0, out.stderr
    jobs = []
    for line in out.stdout.splitlines():
        jobid, state, comment, cpus, wd = line.strip().split("|", 4)
        if Path(wd).resolve() == workdir.resolve():
            jobs.append({"id": jobid, "state": state, "comment": comment, "cpus": int(cpus)})
    return jobs


def cluster_threads(cluster) -> int:
    """The threads of the sampling jobs the tests submit."""
    return min(2, cluster.cpus)


def sampling_run(cluster, wd: Path) -> list[str]:
    """The workflow's two realisations' couplings and samples, with the repository's profile."""
    slurm_workflow(wd)
    (wd / "tiny.yaml").write_text(yaml.safe_dump(tiny_config(threads=cluster_threads(cluster))))
    return slurm_command(*TARGETS, "--configfile", "tiny.yaml")


def flaky_run(cluster, wd: Path) -> list[str]:
    """A one-rule workflow whose job fails on its first attempt (``FLAKY``)."""
    wd.mkdir(parents=True)
    (wd / "Snakefile").write_text(FLAKY)
    shutil.copytree(REPO / "slurm", wd / "slurm")
    prof = yaml.safe_load((wd / "slurm" / "config.yaml").read_text())
    prof["default-resources"] = {"mem_mb": 100}
    (wd / "slurm" / "config.yaml").write_text(yaml.safe_dump(prof, sort_keys=False))
    return slurm_command()


def gpu_run(cluster, wd: Path) -> list[str]:
    """Realisation 0's samples with ``compute.gpu`` on, the GPU jobs in the GPU partition."""
    slurm_workflow(wd)
    cfg = tiny_config(threads=cluster_threads(cluster), gpu=True,
                      gpu_partition=cluster.gpu_partition)
    (wd / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    return slurm_command(TARGETS[0], "--configfile", "tiny.yaml", "--retries", "0")


MODEL = "results/omniglot/model.h5"
MODEL_LOG = "results/logs/omniglot/model.log"
MODEL_CHECKPOINT = "results/.checkpoints/omniglot/model.npz"
TRAINING = {"checkpoint_every": 0,  # a checkpoint at every boundary (every few seconds)
            "omniglot": {"n_train": 20, "n_validation": 20, "n_test": 20,
                         "network": {"width": 16, "head_dim": 8, "layers": 2, "heads": 2},
                         "training": {"steps": 1500, "batch": 16, "log_every": 250}}}


def training_config() -> dict:
    """Omniglot's training at a tiny network, some tens of seconds of steps in compiled calls of
    a few seconds, each a checkpoint."""
    return merge(tiny_config(), TRAINING)


def time_limit_run(cluster, wd: Path) -> list[str]:
    """Omniglot's training job with a time limit of 1 minute (SLURM's smallest) on every attempt,
    resubmitted when it fails (the profile's ``retries``)."""
    slurm_workflow(wd)
    (wd / "tiny.yaml").write_text(yaml.safe_dump(training_config()))
    return slurm_command(MODEL, "--configfile", "tiny.yaml",
                         "--set-resources", "omniglot_train:runtime=1")


def uninterrupted_run(cluster, wd: Path) -> list[str]:
    """The same training job run through on this host, without SLURM: the reference artefact."""
    slurm_workflow(wd)
    (wd / "tiny.yaml").write_text(yaml.safe_dump(training_config()))
    return [PY, "-m", "snakemake", MODEL, "--cores", "1", "--configfile", "tiny.yaml"]


def outlive_time_limit(wd: Path, timeout: float) -> float:
    """Once the training job in ``wd`` has written its first checkpoint, stop its stage process
    (SIGSTOP), so that the job outlives its time limit however fast this host trains, without
    using the CPU meanwhile. At the limit SLURM ends the job as it ends any job that runs past
    it: SIGCONT and SIGTERM to its processes, SIGKILL after ``KillWait``. Returns the time
    (monotonic) at which the process was stopped."""
    deadline = time.monotonic() + timeout
    while not (wd / MODEL_CHECKPOINT).exists():
        assert time.monotonic() < deadline, f"no checkpoint {MODEL_CHECKPOINT} in {timeout:.0f} s"
        time.sleep(0.05)
    os.kill(stage_process(wd, "omniglot_train"), signal.SIGSTOP)
    return time.monotonic()


@pytest.fixture(scope="module")
def cluster_runs(cluster, tmp_path_factory) -> dict[str, tuple[Path, int, str]]:
    """The workflows of the tests below submitted to the cluster at once, as users' runs share
    one (the plugin's waits between status checks overlap), with the time-limit run's reference
    run beside them: name -> (workdir, return code, output)."""
    prepare = {"sampling": sampling_run, "flaky": flaky_run, "gpu": gpu_run,
               "time_limit": time_limit_run, "uninterrupted": uninterrupted_run}
    workdirs = {name: tmp_path_factory.mktemp(name) / "wf" for name in prepare}
    env = snakemake_env(cluster.env)
    with ThreadPoolExecutor(len(prepare) + 1) as pool:
        done = {name: pool.submit(run, prepare[name](cluster, wd), wd, env, RUN_TIMEOUT)
                for name, wd in workdirs.items()}
        stopped = pool.submit(outlive_time_limit, workdirs["time_limit"], RUN_TIMEOUT)
        runs = {name: (workdirs[name], *future.result()) for name, future in done.items()}
    runs["time_limit"] += (stopped.result(),)
    return runs


@pytest.mark.slurm
@pytest.mark.slow
def test_sampling_runs_on_slurm(cluster, cluster_runs):
    from workflow_lib.core.artefacts import read_artefact

    wd, rc, out = cluster_runs["sampling"]
    threads = cluster_threads(cluster)
    assert rc == 0, f"{out[-8000:]}\n{cluster.logs()}"

    for r in (0, 1):
        art = read_artefact(wd / f"results/potts/r{r}/samples.h5", "potts-samples/1",
                            required=("train", "test"))
        assert art["train"].shape == (200, 5) and art["test"].shape == (100, 5)
        assert float(art.attrs["beta"]) == 0.5

    # every job went through sbatch, with the profile's resources and the config's threads
    calls = [line for line in out.splitlines() if line.startswith("sbatch call:")]
    assert len(calls) == 4, calls
    for rule, n_cpus in (("potts_couplings", 1), ("potts_sample", threads)):
        full = merge(yaml.safe_load((REPO / "config.yaml").read_text()), tiny_config(threads))
        want = rules()[rule].resources(load_config(full), {"r": "0"})
        mine = [c for c in calls if f"--comment rule_{rule}_" in c]
        assert len(mine) == 2, calls
        for call in mine:
            assert f"-p {cluster.partition} " in call and f"-t {want['runtime']} " in call, call
            assert f"--mem {want['mem_mb']} " in call, call
            assert f"--cpus-per-task={n_cpus} " in call and "--gpus" not in call, call
    jobs = slurm_jobs(cluster, wd)
    assert sorted(j["comment"] for j in jobs) == sorted(  # one rule per realisation, no wildcard
        f"rule_{rule}_r{r}" for rule in ("potts_couplings", "potts_sample") for r in (0, 1)
    ), jobs
    assert all(j["state"] == "COMPLETED" for j in jobs), jobs
    logs = sorted((wd / ".snakemake" / "slurm_logs").glob("rule_*/*.log"))
    assert len(logs) == 4, logs
    sample_log = next(p for p in logs if p.parts[-2] == "rule_potts_sample_r0").read_text()
    assert f'"threads": {threads}' in sample_log  # the job JSON, built inside the SLURM job


FLAKY = """
rule all:
    input: "flaky.txt"

rule flaky:
    output: "flaky.txt"
    shell:
        "if [ ! -e first-attempt-done ]; then touch first-attempt-done; "
        "echo failing on purpose >&2; exit 1; fi; echo $SLURM_JOB_ID > {output}"
"""


@pytest.mark.slurm
@pytest.mark.slow
def test_failed_job_is_retried(cluster, cluster_runs):
    """A job that fails once is resubmitted (profile ``retries``) and the workflow succeeds."""
    wd, rc, out = cluster_runs["flaky"]
    assert rc == 0, f"{out[-8000:]}\n{cluster.logs()}"
    jobs = sorted(slurm_jobs(cluster, wd), key=lambda j: int(j["id"]))
    assert [j["state"] for j in jobs] == ["FAILED", "COMPLETED"], jobs
    assert (wd / "flaky.txt").read_text().strip() == jobs[-1]["id"]


@pytest.mark.slurm
@pytest.mark.slow
def test_gpu_jobs_ask_through_the_plugins_resources(cluster, cluster_runs):
    """With ``compute.gpu``, a GPU rule's ``sbatch`` asks for the GPU with ``--gpus=MODEL:1`` in
    the configured partition, with its threads; the CPU rule's goes to the default partition
    without a GPU. The local cluster has no GPUs, so SLURM itself refuses the GPU job (the
    request reached ``sbatch`` as the plugin wrote it) and the run fails there."""
    _, rc, out = cluster_runs["gpu"]
    threads = cluster_threads(cluster)
    assert rc != 0, out[-5000:]
    calls = [line for line in out.splitlines() if line.startswith("sbatch call:")]
    couplings = [c for c in calls if "--comment rule_potts_couplings_" in c]
    sample = [c for c in calls if "--comment rule_potts_sample_" in c]
    assert len(couplings) == 1 and len(sample) == 1, calls
    assert f"-p {cluster.partition} " in couplings[0] and "--gpus" not in couplings[0], couplings
    assert f"-p {cluster.gpu_partition} " in sample[0], sample
    assert f"--gpus={GPU_MODEL}:1" in sample[0] and "--gres" not in sample[0], sample
    assert f"--cpus-per-task={threads}" in sample[0] or f"--cpus-per-gpu={threads}" in sample[0]
    assert "Invalid generic resource (gres) specification" in out, out[-5000:]


@pytest.mark.slurm
@pytest.mark.slow
def test_a_job_past_its_time_limit_is_resubmitted_and_resumes(cluster, cluster_runs):
    """A training job that runs past its SLURM time limit is ended by SLURM (TIMEOUT), keeps its
    checkpoint, is resubmitted (the profile's ``retries``), resumes from the checkpoint and
    writes the artefact of a run never stopped: every dataset and attribute equal, timings
    aside."""
    wd, rc, out, stopped_at = cluster_runs["time_limit"]
    assert rc == 0, f"{out[-8000:]}\n{cluster.logs()}"
    calls = [c for c in out.splitlines()
             if c.startswith("sbatch call:") and "--comment rule_omniglot_train" in c]
    assert len(calls) == 2 and all(" -t 1 " in c for c in calls), calls
    jobs = sorted((j for j in slurm_jobs(cluster, wd) if j["comment"] == "rule_omniglot_train"),
                  key=lambda j: int(j["id"]))
    assert [j["state"] for j in jobs] == ["TIMEOUT", "COMPLETED"], jobs
    text = (wd / MODEL_LOG).read_text()
    resumed = f"checkpoint {MODEL_CHECKPOINT} (written "
    assert resumed in text and "): resumed at step " in text and " of 1500 of omniglot" in text, \
        text
    assert not (wd / MODEL_CHECKPOINT).exists()
    ref_wd, ref_rc, ref_out = cluster_runs["uninterrupted"]
    assert ref_rc == 0, ref_out[-5000:]
    assert_same_artefact(wd / MODEL, ref_wd / MODEL)
