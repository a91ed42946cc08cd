"""The template study's stages: read, call one science function, write."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib.core.artefacts import read_artefact, write_artefact, write_csv
from workflow_lib.core.realisations import REALISATION, finish_tables
from workflow_lib.core.registry import Job
from workflow_lib.studies.template.artefacts import TEMPLATE_SQUARES
from workflow_lib.studies.template.registry import STUDY


def squares_of(n: int, offset: int) -> np.ndarray:
    """``(offset + k)^2`` for ``k = 0..n-1``: ``(n,)`` integers (the study's science)."""
    return (offset + np.arange(n)) ** 2


def template_squares(job: Job) -> None:
    """Write the squares of realisation ``params['realisation']`` (``squares: (n,)``)."""
    p = job.params
    squares = squares_of(p["template"]["n"], p["realisation"])
    write_artefact(job.output["squares"], TEMPLATE_SQUARES, {"squares": squares}, p,
                   seeds={"seed": p["seed"]}, attrs={"realisation": p["realisation"]})


def template_tables(job: Job) -> None:
    """Write the table ``squares`` (one row per realisation and integer) from every
    realisation's artefact, in the order every shard writes it (``finish_tables``)."""
    rows = []
    for path in job.input["squares"]:
        art = read_artefact(path, TEMPLATE_SQUARES, required=("squares",))
        r = int(art.attrs["realisation"])
        rows += [{REALISATION: r, "k": k, "square": int(v)} for k, v in enumerate(art["squares"])]
    tables = finish_tables(STUDY, {"squares": pd.DataFrame(rows)})
    for name, table in tables.items():
        write_csv(table, job.output[name])
