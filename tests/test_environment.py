"""A finished run stays finished in a new environment: no rule's command names the interpreter,
the virtual environment or the checkout, so a run copied into another checkout with another
virtual environment plans nothing, and ``snakemake`` and ``python -m snakemake`` plan alike. The
rules find ``python`` on PATH, where the Snakefile puts the folder of the interpreter Snakemake
runs in first, so an environment that is not activated still runs its own interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.workflow_runs import clone

pytestmark = pytest.mark.slow

TARGET = "results/potts/r0/couplings.h5"


def second_venv(dest: Path) -> Path:
    """A virtual environment at ``dest`` with this one's packages (a ``.pth`` file adds this
    environment's site-packages); returns its ``python``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    pth = Path(site.stdout.strip()) / "first_environment.pth"
    pth.write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return python


def bare_env(wd: Path) -> dict[str, str]:
    """No virtual environment on PATH (as when its ``bin/snakemake`` is run without activating
    it); ``workflow_lib`` imported from the checkout ``wd``."""
    env = {k: v for k, v in os.environ.items() if k not in ("SNAKEMAKE_PROFILE", "VIRTUAL_ENV")}
    env["PATH"] = "/usr/bin:/bin"
    env["PYTHONPATH"] = str(wd)
    return env


def dry_run(python: Path | str, wd: Path, *args: str) -> str:
    run = subprocess.run([str(python), *args, "--dry-run", "--cores", "2", "--configfile",
                          "tiny.yaml"], cwd=wd, env=bare_env(wd), capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    return run.stdout + run.stderr


def test_a_run_copied_into_a_new_checkout_and_environment_plans_nothing(tiny_run, tmp_path):
    wd = clone(tiny_run, tmp_path / "elsewhere" / "checkout")
    python = second_venv(tmp_path / "venv")
    where = subprocess.run([python, "-c", "import sys, workflow_lib; print(sys.executable); "
                            "print(workflow_lib.__file__)"], cwd=tmp_path, env=bare_env(wd),
                           capture_output=True, text=True, check=True).stdout.split()
    assert where == [str(python), str(wd / "workflow_lib" / "__init__.py")], where
    assert Path(where[0]).parent != Path(sys.executable).parent

    out = dry_run(python, wd, "-m", "snakemake")
    assert "Nothing to be done" in out, out[-3000:]

    # a forced job runs in the new environment although it is not activated
    forced = subprocess.run([str(python), "-m", "snakemake", TARGET, "--forcerun",
                             "potts_couplings_r0", "--cores", "1", "--configfile", "tiny.yaml"],
                            cwd=wd,
                            env=bare_env(wd), capture_output=True, text=True, timeout=600)
    assert forced.returncode == 0, (forced.stdout + forced.stderr)[-3000:]
    assert (wd / TARGET).stat().st_mtime > (tiny_run / TARGET).stat().st_mtime


def test_snakemake_and_python_m_snakemake_plan_alike(tiny_run):
    """The console script (``bin/snakemake``, whose interpreter path differs from
    ``bin/python``'s) and ``python -m snakemake``, the environment not activated."""
    script = Path(sys.executable).parent / "snakemake"
    assert script.is_file()
    for command in ([script], [sys.executable, "-m", "snakemake"]):
        out = dry_run(command[0], tiny_run, *command[1:], "all", "omniglot", "proteins")
        assert "Nothing to be done" in out, (command, out[-3000:])
