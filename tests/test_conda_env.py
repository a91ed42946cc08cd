"""The rules' software environment, ``envs/workflow_lib.yaml``, as ``snakemake --sdm conda``
deploys it, without conda: Snakemake copies the file to ``.snakemake/conda/<hash>_.yaml`` of the
working directory and runs ``conda env create --file`` on that copy, and conda runs pip on the
``pip:`` entries from the copy's folder (``conda/env/installers/pip.py``), so an entry is read as
pip reads a requirements line there. The environment holds the package's dependencies, each
entry independent of the folder; the package itself reaches every job from the checkout, first on
``PYTHONPATH``."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.conftest import ROOT
from workflow_lib.core.workflow import parsed_workflow
from workflow_lib.runtime.job_environment import job_environment

pytestmark = pytest.mark.xdist_group("conda_env")  # one worker parses the workflow once
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def parsed() -> tuple[Path, bytes, str]:
    """The workflow parsed as Snakemake parses it: (the environment file a rule names, resolved by
    Snakemake, the content Snakemake copies, the ``PYTHONPATH`` the parse leaves for the jobs,
    parsed with another value before it); the process's environment restored after."""
    saved = {key: os.environ.get(key) for key in ("PATH", "PYTHONPATH")}
    os.environ["PYTHONPATH"] = "elsewhere"
    try:
        with parsed_workflow() as workflow:
            env = workflow.get_rule("manifest").expand_conda_env({}).get_conda_env(
                workflow, envs_dir=".snakemake/conda")
            return (Path(env.file.get_path_or_uri(secret_free=True)), env.content,
                    os.environ["PYTHONPATH"])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def deploy(content: bytes, workdir: Path) -> Path:
    """The environment file where ``Env.create`` of Snakemake puts it before creating the
    environment: ``<workdir>/.snakemake/conda/<hash>_.yaml``, the hash over the folder's real path
    and the content (there is no pin or post-deploy file)."""
    envs = workdir / ".snakemake" / "conda"
    envs.mkdir(parents=True)
    name = hashlib.md5(os.path.realpath(envs).encode() + content).hexdigest()
    target = envs / f"{name}_.yaml"
    target.write_bytes(content)
    return target


def pip_target(entry: str, folder: Path, environ: dict[str, str]) -> Path | None:
    """The local path the requirements line ``entry`` installs when pip runs in ``folder``, as pip
    reads it: ``-e``/``--editable`` dropped, ``${NAME}`` expanded from ``environ``, a ``file:``
    URL's path, and a path (a line with a separator or a leading dot) taken from ``folder``;
    ``None`` for a requirement on a package (name, extras, versions)."""
    text = re.sub(r"^(-e|--editable)[\s=]+", "", entry.strip())
    text = re.sub(r"\$\{([A-Z0-9_]+)\}", lambda m: environ.get(m[1], m[0]), text)
    if text.startswith("file:"):
        return Path(urlparse(text).path)
    if os.sep in text or text.startswith("."):
        return (folder / text).resolve()
    Requirement(text)  # otherwise it must read as a requirement
    return None


def pip_entries(path: Path) -> list[str]:
    env = yaml.safe_load(path.read_text())
    return next(each["pip"] for each in env["dependencies"] if isinstance(each, dict))


def test_a_path_entry_is_read_from_the_deployed_copy(tmp_path):
    """What made the former entry ``..`` wrong: from the copy's folder it names ``.snakemake``."""
    folder = deploy(b"", tmp_path).parent
    assert pip_target("..", folder, {}) == tmp_path / ".snakemake"
    assert pip_target("-e ${CHECKOUT}", folder, {"CHECKOUT": str(ROOT)}) == ROOT
    assert pip_target(f"file://{ROOT}", folder, {}) == ROOT
    assert pip_target("jax[cpu]>=0.4.30", folder, {}) is None


def test_every_rule_names_the_file_snakemake_resolves(parsed):
    path, content, _ = parsed
    assert path == ROOT / "envs" / "workflow_lib.yaml"
    assert content == path.read_bytes()


def test_the_deployed_environment_installs_the_package_dependencies(parsed, tmp_path):
    """Deployed where ``--sdm conda`` puts it, no entry names a path (none depends on the folder
    the copy lies in) and the entries are ``pyproject.toml``'s dependencies, Python its
    ``requires-python``."""
    _, content, _ = parsed
    deployed = deploy(content, tmp_path)
    entries = pip_entries(deployed)
    assert [pip_target(e, deployed.parent, dict(os.environ)) for e in entries] == [None] * len(
        entries)
    assert {Requirement(e) for e in entries} == {Requirement(d) for d in PYPROJECT["dependencies"]}
    conda = yaml.safe_load(deployed.read_text())["dependencies"]
    python = next(each for each in conda if isinstance(each, str) and each.startswith("python "))
    assert SpecifierSet(python.split(" ", 1)[1]) == SpecifierSet(PYPROJECT["requires-python"])


def test_jobs_import_the_checkout_whose_snakefile_runs(parsed, tmp_path):
    """The parse puts the checkout first on the jobs' ``PYTHONPATH``, and a job started with that
    environment in another folder imports the package from the checkout: here a checkout at
    another path (its package linked), which no installation names."""
    assert parsed[2].split(os.pathsep) == [str(ROOT), "elsewhere"]
    checkout, work = tmp_path / "checkout", tmp_path / "work"
    checkout.mkdir()
    work.mkdir()
    (checkout / "workflow_lib").symlink_to(ROOT / "workflow_lib", target_is_directory=True)
    environ = {**os.environ, **job_environment(str(checkout), sys.executable, os.environ)}
    where = "import workflow_lib; print(workflow_lib.__file__)"
    run = subprocess.run([sys.executable, "-c", where], cwd=work, env=environ,
                         capture_output=True, text=True, check=True)
    assert Path(run.stdout.strip()) == checkout / "workflow_lib" / "__init__.py"


def test_the_job_environment_names_each_folder_once():
    first = job_environment("/checkout", "/venv/bin/python", {"PATH": "/usr/bin"})
    again = job_environment("/checkout", "/venv/bin/python", first)
    assert again == first == {"PATH": os.pathsep.join(["/venv/bin", "/usr/bin"]),
                              "PYTHONPATH": "/checkout"}
