"""Stages ``aggregate`` (the Potts paper's tables), ``figure`` (one panel, PNG and PDF) and
``claims`` (the claims table)."""

from __future__ import annotations

import logging

import pandas as pd

from workflow_lib.artefacts import write_csv
from workflow_lib.claims import log_claims
from workflow_lib.plotting import save_figure
from workflow_lib.registry import Job
from workflow_lib.studies.potts_paper import figures, tables
from workflow_lib.studies.potts_paper.claims import potts_claims
from workflow_lib.studies.potts_paper.registry import STUDY

log = logging.getLogger("workflow_lib.stages")

DRAW = {  # panel -> its drawing function, called with the panel's tables (its registry entry)
    "fig2a": figures.fig2a_test_loss,
    "fig2c": figures.fig2c_reconstruction,
    "fig2d": figures.fig2d_interpolation,
    "fig3_left": figures.fig3_left_replica,
    "fig3_right": figures.fig3_right_sample_complexity,
}


def aggregate(job: Job) -> None:
    """Write the tidy tables of every stage's artefacts (CSV; ``potts_paper.tables``); one warning
    line per unconverged fit or mostly in-sample test set."""
    built = tables.build_tables(**job.input)
    for line in tables.warnings(built["training_final"], built["plm"], built["sample_complexity"]):
        log.warning("%s", line)
    for name, df in built.items():
        write_csv(df, job.output[name])


def figure(job: Job) -> None:
    """Draw panel ``params['panel']`` from the tables (Fig. 2b: from the trained models of
    realisation 0) and save it as PNG and PDF."""
    panel = job.params["panel"]
    if panel == "fig2b":
        fig = figures.fig2b_attention_maps(*tables.attention_maps(job.input["models"]))
    elif panel in DRAW:
        names = STUDY.panel(panel).tables
        fig = DRAW[panel](*(pd.read_csv(job.input[name]) for name in names))
    else:
        raise ValueError(f"unknown figure panel {panel!r}")
    save_figure(fig, job.output)


def claims(job: Job) -> None:
    """The claims table of the Potts paper (``potts_paper.claims``) from the study's tables; one
    log line per claim with its verdict."""
    table = potts_claims({name: pd.read_csv(path) for name, path in job.input.items()})
    log_claims(table, log)
    write_csv(table, job.output["claims"])
