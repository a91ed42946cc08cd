"""Stages ``aggregate`` (the Potts paper's tables) and ``claims`` (the claims table); its panels
are drawn by ``workflow_lib.figures``."""

from __future__ import annotations

import logging

import pandas as pd

from workflow_lib.artefacts import write_csv
from workflow_lib.claims import log_claims
from workflow_lib.registry import Job
from workflow_lib.shards import finish_tables
from workflow_lib.studies.potts_paper import tables
from workflow_lib.studies.potts_paper.claims import potts_claims
from workflow_lib.studies.potts_paper.registry import STUDY

log = logging.getLogger("workflow_lib.stages")

def aggregate(job: Job) -> None:
    """Write the tidy tables of every stage's artefacts (CSV; ``potts_paper.tables``), in the
    order of ``shards.finish_tables``; one warning line per unconverged fit or mostly in-sample
    test set."""
    built = finish_tables(STUDY, tables.build_tables(**job.input))
    for line in tables.warnings(built["training_final"], built["plm"], built["sample_complexity"]):
        log.warning("%s", line)
    for name, df in built.items():
        write_csv(df, job.output[name])


def claims(job: Job) -> None:
    """The claims table of the Potts paper (``potts_paper.claims``) from the study's tables; one
    log line per claim with its verdict."""
    table = potts_claims({name: pd.read_csv(path) for name, path in job.input.items()})
    log_claims(table, log)
    write_csv(table, job.output["claims"])
