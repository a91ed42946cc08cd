"""The JAX backend of a job: GPU jobs that find no GPU stop with one line, CPU jobs stay on the
CPU, GPU jobs share a device, artefacts record backend and device. Real stage processes; on a
host whose JAX sees a GPU the tests of a missing GPU are skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import jax
import pytest
from packaging.requirements import Requirement

from tests.conftest import ROOT
from tests.workflow_runs import TINY, write_config
from workflow_lib.core.artefacts import read_artefact
from workflow_lib.core.backend import CUDA_INSTALL
from workflow_lib.studies.potts_paper.artefacts import POTTS_COUPLINGS

needs_no_gpu = pytest.mark.skipif(jax.default_backend() == "gpu", reason="JAX sees a GPU here")
PARAMS = {"seed": 1, "realisation": 0, "potts": TINY["potts"] | {"U": "gaussian"}}


def run_stage(target: str, job: dict, env: dict[str, str] | None = None, rule: str = ""):
    """``python -m workflow_lib stage TARGET`` on ``job`` (for ``rule``: as a rule runs it)."""
    cmd = [sys.executable, "-m", "workflow_lib", "stage", target, "--job", json.dumps(job),
           *(["--rule", rule] if rule else [])]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def test_cuda_extra_installs_jax_within_the_jax_pin():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pin = next(r for r in map(Requirement, project["dependencies"]) if r.name == "jax")
    (extra,) = map(Requirement, project["optional-dependencies"]["cuda12"])
    assert (extra.name, extra.extras, extra.specifier) == ("jax", {"cuda12"}, pin.specifier)
    assert CUDA_INSTALL == "pip install -e '.[cuda12]'"
    assert CUDA_INSTALL in (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")


@needs_no_gpu
def test_a_gpu_job_without_a_gpu_stops_at_start_with_one_line(tmp_path):
    """A sample job with device gpu: one line naming the rule and what to install, before it
    reads its (here missing) input; no traceback, no fallback to the CPU, no artefact."""
    job = {"input": {"couplings": str(tmp_path / "missing.h5")},
           "output": {"samples": str(tmp_path / "s.h5")}, "params": PARAMS, "device": "gpu"}
    run = run_stage("workflow_lib.studies.potts_paper.stages_data:sample", job,
                    rule="potts_sample")
    assert run.returncode == 2, run.stderr[-2000:]
    assert error_lines(run.stderr) == [
        "error: rule potts_sample runs on a GPU (compute.gpu: true), but JAX finds none: "
        f"install a CUDA JAX with {CUDA_INSTALL} on a host with an NVIDIA GPU, or set "
        "compute.gpu: false"
    ]
    assert "Traceback" not in run.stderr and "Falling back" not in run.stderr
    assert list(tmp_path.iterdir()) == []


@needs_no_gpu
def test_on_a_gpu_host_without_a_cuda_jax_the_gpu_job_stops_where_jax_would_fall_back():
    """A GPU host with this CPU-only JAX (JAX's probe for NVIDIA device files answers yes): JAX
    alone falls back to the CPU with a warning; the GPU job stops with JAX's reason and the
    install line instead."""
    probe = "import jax._src.hardware_utils as h; h.has_visible_nvidia_gpu = lambda: True; "
    plain = subprocess.run([sys.executable, "-c", probe + "import jax; print(jax.devices())"],
                           capture_output=True, text=True, timeout=120, check=True)
    assert "Falling back to cpu" in plain.stderr
    job = json.dumps({"params": PARAMS, "device": "gpu"})
    code = (probe + "import sys; from workflow_lib.__main__ import main; "
            "sys.exit(main(['stage', 'workflow_lib.studies.potts_paper.stages_data:sample', "
            f"'--rule', 'potts_sample', '--job', {job!r}]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    (line,) = error_lines(run.stderr)
    assert line.startswith("error: rule potts_sample runs on a GPU (compute.gpu: true), but JAX "
                           "cannot start CUDA (Unable to initialize backend 'cuda'")
    assert line.endswith(f"install a CUDA JAX with {CUDA_INSTALL} on a host with an NVIDIA GPU, "
                         "or set compute.gpu: false")
    assert "JAX_PLATFORMS" not in line and "Falling back" not in run.stderr


@needs_no_gpu
def test_the_omniglot_command_with_gpus_on_stops_the_same_way(tmp_path):
    cmd = [sys.executable, "-m", "workflow_lib", "omniglot", str(tmp_path / "out"),
           "--configfile", str(ROOT / "config.yaml"), "--configfile",
           str(ROOT / "config" / "gpu.yaml")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-2000:]
    (line,) = error_lines(run.stderr)
    assert line.startswith("error: the omniglot command runs on a GPU") and CUDA_INSTALL in line


def test_a_cpu_job_stays_on_the_cpu_and_its_artefact_says_so(tmp_path):
    """``JAX_PLATFORMS=cuda`` in the environment: JAX alone would start on CUDA or, without it,
    not at all; the runner keeps a CPU job on the CPU, and the artefact records backend and
    device beside the other provenance."""
    out = tmp_path / "c.h5"
    run = run_stage("workflow_lib.studies.potts_paper.stages_data:couplings",
                    {"output": {"couplings": str(out)}, "params": PARAMS},
                    env={"JAX_PLATFORMS": "cuda"})
    assert run.returncode == 0, run.stderr[-2000:]
    art = read_artefact(out, POTTS_COUPLINGS)
    assert (art.attrs["jax_backend"], art.attrs["jax_device"]) == ("cpu", "cpu")
    assert art.attrs["jax_version"] == jax.__version__


@pytest.mark.parametrize(("device", "preset", "expected"), [
    ("gpu", None, ("cuda,cpu", "false")),
    ("gpu", "true", ("cuda,cpu", "true")),  # the environment's choice stands
    ("cpu", None, ("cpu", None)),
])
def test_select_restricts_platforms_and_lets_gpu_jobs_share_a_device(device, preset, expected):
    env = {k: v for k, v in os.environ.items() if k != "XLA_PYTHON_CLIENT_PREALLOCATE"}
    if preset is not None:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = preset
    code = ("import json, os, jax; from workflow_lib.core.backend import select; "
            f"select({device!r}); print(json.dumps([jax.config.jax_platforms, "
            "os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE')]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True)
    assert tuple(json.loads(run.stdout)) == expected


@pytest.mark.slow
@needs_no_gpu
def test_gpu_preset_in_a_snakemake_run_stops_the_gpu_rule_and_not_the_cpu_one(tmp_path):
    """``--resources gpu=1 --configfile tiny.yaml config/gpu.yaml``: the couplings job runs on
    the CPU; the sample job, a GPU rule, stops at start with the one line in its log."""
    config = write_config(tmp_path, TINY)
    target = tmp_path / "results" / "potts" / "r0" / "samples.h5"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path),
           "--cores", "2", "--resources", "gpu=1",
           "--configfile", str(config), str(ROOT / "config" / "gpu.yaml"), "--", str(target)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and not target.exists(), (run.stdout + run.stderr)[-3000:]
    couplings = read_artefact(tmp_path / "results" / "potts" / "r0" / "couplings.h5")
    assert couplings.attrs["jax_backend"] == "cpu"
    # config/gpu.yaml's chunks of realisations: one job samples both realisations
    log = (tmp_path / "results" / "logs" / "potts" / "r0-1" / "samples.log").read_text()
    (line,) = error_lines(log)
    assert line.startswith("error: rule potts_sample runs on a GPU") and CUDA_INSTALL in line
    assert "Falling back" not in log and "Traceback" not in log
