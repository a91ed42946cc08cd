"""Helpers for tests that run the real workflow with Snakemake on tiny configs, and the tiny
configs themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import yaml

from tests.conftest import ROOT
from workflow_lib.core.workflow import stage_functions

TINY = {
    "realisations": 2,
    "compute": {"threads": 1},
    "potts": {"L": 5, "C": 3, "beta": 0.5},
    "sampling": {"n_train": 200, "n_test": 100, "burn_in": 50, "sweeps_between": 2, "blocks": 2},
    "sample_complexity": {"M": [2, 10, 50]},
    "omniglot": {"enabled": False},
}

# Every rule of the default target, Omniglot and the protein study included, each job small.
TINY_ALL = {
    **TINY,
    "training": {"architectures": ["factored", "vanilla1"], "interpolation_a": [0.0, 1.0],
                 "epochs": 4, "eval_every": 2, "restarts": 1},
    # random-start factored fits run in the sample-complexity stage
    "plm": {"max_iter": 50, "restarts": 1, "kinds": ["full", "factored_from_truth"]},
    "replica": {"L": 20, "theory_alphas": 20, "sim_alphas": [0.5, 2.0], "realisations": 4,
                "lambdas": [0.01]},
    "sample_complexity": {**TINY["sample_complexity"], "max_iter": 50, "restarts": 1},
    "paths": {"experiments": ["four_paths", "two_paths"], "widths": [10, 1000],
              "sample_widths": [10], "n_train": 20, "n_test": 40, "tokens": 8, "features": 16,
              "sampler": {"warmup": 20, "samples": 20, "chains": 2}},
    "omniglot": {"n_train": 20, "n_validation": 20, "n_test": 40,
                 "network": {"width": 8, "head_dim": 4, "layers": 2, "heads": 2},
                 "training": {"steps": 20, "batch": 8, "log_every": 10},
                 "widths": [10, 1000], "temperatures": [0.1, 1.0], "n_pcs": 5,
                 "sampler": {"warmup": 10, "samples": 10, "chains": 1}},
    # the shipped PF00014 subsample, every model kind, a few iterations
    "proteins": {"enabled": True, "realisations": 2, "heads": [2],
                 "attention": ["signed", "softmax"], "restarts": 1, "max_iter": 20,
                 "transformer": {"steps": 20, "model_dim": 8, "batch_size": 16, "eval_every": 5,
                                 "window": 2, "eval_sequences": 64, "jacobian_sequences": 4}},
}

# What a workflow copy holds besides its own workflow_lib (``data`` is linked). Not
# the quick preset config.yaml: the Snakefile would merge it under the test's config file.
WORKFLOW_FILES = ("Snakefile", "rules", "envs", "slurm", "report")


def write_config(tmp: Path, overrides: dict) -> Path:
    path = tmp / "tiny.yaml"
    path.write_text(yaml.safe_dump({**overrides, "results": str(tmp / "results")}))
    return path


def snakemake(tmp: Path, config: Path, *args: str, timeout: int = 600):
    """Run the repository's workflow in ``tmp`` with ``config``; returns the CompletedProcess."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp),
           "--configfile", str(config), "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def repo_copy(dest: Path) -> Path:
    """The workflow with its own copy of ``workflow_lib`` in ``dest`` (the
    Omniglot data linked): run it with ``copy_env(dest)`` so that this copy is imported (and
    hashed for the code digests), and may be edited."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in (*WORKFLOW_FILES, "workflow_lib"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    (dest / "data").symlink_to(ROOT / "data", target_is_directory=True)
    return dest


def copy_env(wd: Path) -> dict[str, str]:
    """The environment that imports ``workflow_lib`` from the copy ``wd``."""
    env = dict(os.environ)
    env.pop("SNAKEMAKE_PROFILE", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(wd), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def snakemake_in(wd: Path, *args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    """``snakemake ARGS --cores 2 --configfile tiny.yaml`` in the copy ``wd``."""
    cmd = [sys.executable, "-m", "snakemake", *args, "--cores", "2", "--configfile", "tiny.yaml"]
    return subprocess.run(cmd, cwd=wd, env=copy_env(wd), capture_output=True, text=True,
                          timeout=timeout)


def clone(run: Path, dest: Path) -> Path:
    """A copy of a finished run (mtimes and .snakemake metadata kept) to modify."""
    shutil.copytree(run, dest, symlinks=True, ignore=shutil.ignore_patterns(".test-*"))
    return dest


def registered(rule: str) -> str:
    """The registered rule a Snakemake rule of a run runs: for a chunk's rule
    (``registry.chunk_rule``: the registered name, ``_r`` and the chunk) the one it is made from,
    else ``rule`` itself (a registered rule, or a target rule such as ``all``)."""
    from workflow_lib.core.studies import rules

    names = rules()
    made_from = [name for name in names if rule.startswith(f"{name}_r")]
    assert len(made_from) <= 1 and not (made_from and rule in names), (rule, made_from)
    return made_from[0] if made_from else rule


TIMINGS = ("created",)  # attributes that are no result, besides those ending in "seconds"


def stage_process(wd: Path, rule: str) -> int:
    """The pid of the process that runs registered rule ``rule``'s stage (``python -m
    workflow_lib stage FUNCTION``) in ``wd`` (Linux /proc)."""
    stage = stage_functions()[rule]
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if argv[2:5] == [b"workflow_lib", b"stage", stage.encode()] \
                    and Path(os.readlink(proc / "cwd")) == wd.resolve():
                return int(proc.name)
        except (OSError, ValueError):
            continue
    raise AssertionError(f"no process of stage {stage} (rule {rule}) in {wd}")


def contents(path: Path) -> tuple[dict, dict]:
    """An artefact's datasets and its attributes but the timings (``TIMINGS``, ``*seconds``)."""
    with h5py.File(path) as f:
        data = {}
        f.visititems(lambda name, item: data.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
        attrs = {k: v for k, v in f.attrs.items()
                 if k not in TIMINGS and not k.endswith("seconds")}
    return data, attrs


def assert_same_artefact(path: Path, reference: Path) -> None:
    data, attrs = contents(path)
    ref_data, ref_attrs = contents(reference)
    assert data.keys() == ref_data.keys()
    for name, value in ref_data.items():
        assert data[name].dtype == value.dtype, name
        assert np.array_equal(data[name], value, equal_nan=value.dtype.kind == "f"), name
    assert attrs.keys() == ref_attrs.keys()
    for name, value in ref_attrs.items():
        same = (np.array_equal(attrs[name], value, equal_nan=True)
                if np.asarray(value).dtype.kind == "f" else np.array_equal(attrs[name], value))
        assert same, (name, attrs[name], value)
