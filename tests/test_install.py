"""The package installs as a wheel: its config schema inside it, no source tree needed (the
workflow's rules are files of the checkout, ``rules/``, not of the package)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_wheel_installs_without_the_source_tree_and_checks_both_presets(tmp_path):
    source = tmp_path / "source"  # a copy: the build leaves build/ and egg-info behind
    for name in ("pyproject.toml", "README.md", "LICENSE", "workflow_lib"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(wheels), str(source)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    wheel = next(wheels.glob("workflow_lib-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # the wheel alone, not editable; its dependencies from this environment's site-packages
    target = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                             "['purelib'])"], capture_output=True, text=True, check=True)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
         target.stdout.strip(), str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    env = {"PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": "/usr/bin:/bin"}
    where = subprocess.run([python, "-c", "import workflow_lib, sys; print(workflow_lib.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    for preset in (["config.yaml"], ["config.yaml", "config/paper.yaml"]):
        run = subprocess.run([python, "-m", "workflow_lib", "check-config",
                              *(str(ROOT / p) for p in preset)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "valid" in run.stdout, run.stdout + run.stderr
    files = subprocess.run([python, "-c", "from importlib import resources; "
                            "r = resources.files('workflow_lib'); "
                            "print((r / 'schemas' / 'config.schema.json').is_file(), "
                            "(r / 'studies' / 'proteins' / 'config.schema.json').is_file())"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert files.stdout.split() == ["True", "True"]
