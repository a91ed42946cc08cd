"""Stages ``paths_tables`` (tidy tables of the attention-paths artefacts) and ``paths_claims``;
its panels (Fig. 2c-e of the attention-paths paper) are drawn by ``workflow_lib.figures``."""

from __future__ import annotations

import logging

import pandas as pd

from workflow_lib.artefacts import read_artefact, write_csv
from workflow_lib.claims import log_claims
from workflow_lib.registry import Job
from workflow_lib.shards import finish_tables
from workflow_lib.studies.attention_hmm import tables
from workflow_lib.studies.attention_hmm.artefacts import PATHS_SAMPLES, PATHS_THEORY
from workflow_lib.studies.attention_hmm.claims import hmm_claims
from workflow_lib.studies.attention_hmm.registry import STUDY

log = logging.getLogger("workflow_lib.stages")


def paths_tables(job: Job) -> None:
    """Tidy CSV tables of every theory and samples artefact (``attention_hmm.tables``), in the
    order of ``shards.finish_tables``."""
    theories = [read_artefact(f, PATHS_THEORY) for f in job.input["theory"]]
    samples = [read_artefact(f, PATHS_SAMPLES) for f in job.input.get("samples", [])]
    for name, df in finish_tables(STUDY, tables.build(theories, samples)).items():
        write_csv(df, job.output[name])


def paths_claims(job: Job) -> None:
    """The claims table of the study (``attention_hmm.claims``) from its tables; one log line per
    claim with its verdict."""
    table = hmm_claims({name: pd.read_csv(path) for name, path in job.input.items()})
    log_claims(table, log)
    write_csv(table, job.output["claims"])
