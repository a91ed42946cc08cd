"""Stages ``paths_tables`` (tidy tables of the attention-paths artefacts), ``paths_figure``
(Fig. 2c-e of the attention-paths paper, from the tables) and ``paths_claims``."""

from __future__ import annotations

import logging

import pandas as pd

from workflow_lib.artefacts import PATHS_SAMPLES, PATHS_THEORY, read_artefact, write_csv
from workflow_lib.claims import log_claims
from workflow_lib.plotting import save_figure
from workflow_lib.registry import Job
from workflow_lib.studies.attention_hmm import figures as paths_figures
from workflow_lib.studies.attention_hmm import tables
from workflow_lib.studies.attention_hmm.claims import hmm_claims

log = logging.getLogger("workflow_lib.stages")


def paths_tables(job: Job) -> None:
    """Tidy CSV tables of every theory and samples artefact (``attention_hmm.tables``)."""
    theories = [read_artefact(f, PATHS_THEORY) for f in job.input["theory"]]
    samples = [read_artefact(f, PATHS_SAMPLES) for f in job.input.get("samples", [])]
    for name, df in tables.build(theories, samples).items():
        write_csv(df, job.output[name])


def paths_figure(job: Job) -> None:
    """Draw panel ``params['panel']`` (paths_fig2c, paths_fig2d or paths_fig2e) from the tables;
    PNG and PDF."""
    panel = job.params["panel"]
    read = lambda name: pd.read_csv(job.input[name])  # noqa: E731
    if panel in ("paths_fig2c", "paths_fig2e"):
        experiment = "four_paths" if panel == "paths_fig2c" else "two_paths"
        fig = paths_figures.accuracy_and_order_parameter(
            read("accuracy"), read("order_parameters"), experiment, panel[-1]
        )
    elif panel == "paths_fig2d":
        fig = paths_figures.pc_overlaps(read("pc_overlaps"))
    else:
        raise ValueError(f"unknown figure panel {panel!r}")
    save_figure(fig, job.output)


def paths_claims(job: Job) -> None:
    """The claims table of the study (``attention_hmm.claims``) from its tables; one log line per
    claim with its verdict."""
    table = hmm_claims({name: pd.read_csv(path) for name, path in job.input.items()})
    log_claims(table, log)
    write_csv(table, job.output["claims"])
