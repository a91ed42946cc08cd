"""Stage ``manifest``: what a run is, written after the tables of its studies.

``RESULTS/manifest.json`` holds the run's shard (null for a whole run;
``workflow_lib.core.realisations``), its config without ``shards.RUN_KEYS`` and that config's
digest, each study's realisations in the run, the code digest of every rule of each study's science
(``Study.science``; ``workflow_lib.core.code_digest``), the backend of the jobs marked for a GPU and
the host that ran the workflow (its processor: ``workflow_lib.core.host``). A snapshot of the run
reads it (``workflow_lib.shards.snapshots``). """

from __future__ import annotations

import json
import os
import platform
from typing import Any

from workflow_lib.core import host
from workflow_lib.core.artefacts import atomic_path
from workflow_lib.core.config import digest
from workflow_lib.core.registry import Job


def record(params: dict[str, Any]) -> dict[str, Any]:
    """The manifest of a run whose config slice is ``params`` (``realisations.manifest_params``
    with the ``code`` digest of each rule of every study's science): the params, the config's
    digest, the backend of the jobs marked for a GPU and the host."""
    return {**params, "config_digest": digest(params["config"]),
            "backend": "gpu" if params["config"]["compute"]["gpu"] else "cpu",
            "host": {"name": platform.node(), "cpu": host.cpu(), "cpus": os.cpu_count(),
                     "system": platform.platform()}}


def manifest(job: Job) -> None:
    """The run's manifest (JSON, ``record``) after the tables of its studies."""
    with atomic_path(job.output["manifest"]) as tmp:
        tmp.write_text(json.dumps(record(job.params), indent=1, sort_keys=True) + "\n")
