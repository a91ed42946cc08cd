"""Stages ``protein_tables`` (tidy tables of the fits), ``protein_claims`` and
``protein_figure`` (precision against rank, contact maps)."""

from __future__ import annotations

import logging

import pandas as pd

from workflow_lib.artefacts import PROTEIN_DATA, PROTEIN_FIT, read_artefact, write_csv
from workflow_lib.claims import log_claims
from workflow_lib.plotting import save_figure
from workflow_lib.registry import Job
from workflow_lib.studies.proteins import figures, tables
from workflow_lib.studies.proteins.claims import claims_table

log = logging.getLogger("workflow_lib.stages")


def protein_tables(job: Job) -> None:
    """Tidy CSV tables of every data and fit artefact (``proteins.tables``)."""
    data = [read_artefact(f, PROTEIN_DATA, required=("columns", "test")) for f in job.input["data"]]
    fits = [read_artefact(f, PROTEIN_FIT, required=("scores",)) for f in job.input["fits"]]
    built = tables.build(data, fits, job.params["contacts"], job.params["distance_kinds"])
    for name, df in built.items():
        write_csv(df, job.output[name])


def protein_claims(job: Job) -> None:
    """The claims table of the study from its tables; one log line per claim."""
    table = claims_table({name: pd.read_csv(path) for name, path in job.input.items()})
    log_claims(table, log)
    write_csv(table, job.output["claims"])


def protein_figure(job: Job) -> None:
    """Draw panel ``params['panel']`` (protein_precision or protein_contacts); PNG and PDF."""
    panel = job.params["panel"]
    if panel == "protein_precision":
        fig = figures.precision_vs_rank(pd.read_csv(job.input["curves"]))
    elif panel == "protein_contacts":
        fig = figures.contact_maps(pd.read_csv(job.input["pairs"]))
    else:
        raise ValueError(f"unknown figure panel {panel!r}")
    save_figure(fig, job.output)
