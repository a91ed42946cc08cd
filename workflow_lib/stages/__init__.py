"""The functions the Snakemake rules call, one per rule, registered in ``STAGES``.

Each takes a ``Job``: the rule's input and output paths, the config slice it depends on
(``params``), its seeds and threads. Stages read and write artefacts; the science lives in the
other subpackages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Job:
    """``input``/``output``: name -> path; ``params``: the config slice (recorded and hashed)."""

    input: dict[str, Any] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    threads: int = 1


# stage (= rule) name -> "module:function"; the command line runs it, and the rule's code digest
# is derived from what that function imports (``workflow_lib.code_digest``).
STAGES = {
    "couplings": "workflow_lib.stages.potts:couplings",
    "sample": "workflow_lib.stages.potts:sample",
    "train": "workflow_lib.stages.mlm:train",
    "plm": "workflow_lib.stages.mlm:plm",
    "replica_theory": "workflow_lib.stages.theory:replica_theory",
    "replica_sims": "workflow_lib.stages.theory:replica_sims",
    "sample_complexity": "workflow_lib.stages.mlm:sample_complexity",
    "aggregate": "workflow_lib.stages.figures:aggregate",
    "figure": "workflow_lib.stages.figures:figure",
    "paths_features": "workflow_lib.stages.paths:paths_features",
    "paths_theory": "workflow_lib.stages.paths:paths_theory",
    "paths_sample": "workflow_lib.stages.paths:paths_sample",
    "paths_tables": "workflow_lib.stages.paths_figures:paths_tables",
    "paths_figure": "workflow_lib.stages.paths_figures:paths_figure",
    "omniglot_data": "workflow_lib.stages.omniglot:omniglot_data",
    "omniglot_train": "workflow_lib.stages.omniglot:omniglot_train",
    "omniglot_features": "workflow_lib.stages.omniglot:omniglot_features",
    "omniglot_theory": "workflow_lib.stages.omniglot:omniglot_theory",
    "omniglot_sample": "workflow_lib.stages.omniglot:omniglot_sample",
    "omniglot_prune": "workflow_lib.stages.omniglot:omniglot_prune",
    "omniglot_tables": "workflow_lib.stages.omniglot_figures:omniglot_tables",
    "omniglot_figure": "workflow_lib.stages.omniglot_figures:omniglot_figure",
}


class StageError(RuntimeError):
    """A stage's output fails a property it promises; the message is one line for the user and
    no artefact is written."""
