"""The functions the Snakemake rules call, one per rule.

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


class StageError(RuntimeError):
    """A stage's output fails a property it promises; the message is one line for the user and
    no artefact is written."""
