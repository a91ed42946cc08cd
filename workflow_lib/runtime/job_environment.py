"""The environment every job inherits from the Snakemake process that parses the workflow.

A job runs ``python -m workflow_lib stage ...`` (``rules/common.smk``'s ``STAGE``), in the
environment Snakemake runs in or, with ``--sdm conda``, in the conda environment of
``envs/workflow_lib.yaml``, which holds the package's dependencies but not the package. Either way
the job imports ``workflow_lib`` from the checkout whose Snakefile is parsed, as the Snakemake
process itself does (Snakemake puts the Snakefile's folder first on ``sys.path``), because that
checkout comes first on ``PYTHONPATH``; ``python`` is found on ``PATH``, where the folder of the
interpreter Snakemake runs in comes first (a conda environment's activation puts its own
``bin`` before it). The command names neither path, so a results folder copied elsewhere
stays valid.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def _first(entry: str, value: str | None) -> str:
    """The search path ``value`` with ``entry`` first and nowhere else."""
    rest = [each for each in (value or "").split(os.pathsep) if each and each != entry]
    return os.pathsep.join([entry, *rest])


def job_environment(basedir: str, interpreter: str, environ: Mapping[str, str]) -> dict[str, str]:
    """``PATH`` and ``PYTHONPATH`` for the jobs of the workflow in ``basedir`` (its Snakefile's
    folder) run by Snakemake under ``interpreter``: ``environ``'s, with the interpreter's folder
    first on ``PATH`` and ``basedir`` first on ``PYTHONPATH`` (each once, however often the
    workflow is parsed in one process)."""
    return {"PATH": _first(os.path.dirname(interpreter), environ.get("PATH", os.defpath)),
            "PYTHONPATH": _first(os.path.abspath(basedir), environ.get("PYTHONPATH"))}
