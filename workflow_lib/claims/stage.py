"""Stage of every study's claims rule: the study's claims table from its tables
(``study_claims.claims_table``)."""

from __future__ import annotations

import logging

import pandas as pd

from workflow_lib.claims.statistics import log_claims
from workflow_lib.claims.study import claims_table
from workflow_lib.core.artefacts import write_csv
from workflow_lib.core.registry import Job
from workflow_lib.core.studies import study

log = logging.getLogger("workflow_lib.stages")


def claims(job: Job) -> None:
    """The claims table of the study from its tables, by the function its registry names
    (``Study.claims_of``), its columns checked against ``claims.COLUMNS``; one log line per
    claim with its verdict.

    The study is ``params['study']``; its tables are the inputs, by name; the table goes to
    ``output['claims']``."""
    table = claims_table(study(job.params["study"]),
                         {name: pd.read_csv(path) for name, path in job.input.items()})
    log_claims(table, log)
    write_csv(table, job.output["claims"])
