"""Stage of ``potts_tables``: the Potts paper's tables; its claims table is made by
``workflow_lib.claims.stage`` and its panels are drawn by ``workflow_lib.pages.figure``."""

from __future__ import annotations

import logging

from workflow_lib.core.artefacts import write_csv
from workflow_lib.core.realisations import finish_tables
from workflow_lib.core.registry import Job
from workflow_lib.studies.potts_paper import tables
from workflow_lib.studies.potts_paper.registry import STUDY

log = logging.getLogger("workflow_lib.stages")


def aggregate(job: Job) -> None:
    """Write the tidy tables of every stage's artefacts (CSV; ``potts_paper.tables``), in the
    order of ``realisations.finish_tables``; one warning line per unconverged fit or mostly
    in-sample test set."""
    built = finish_tables(STUDY, tables.build_tables(**job.input))
    for line in tables.warnings(built["training_final"], built["plm"], built["sample_complexity"]):
        log.warning("%s", line)
    for name, df in built.items():
        write_csv(df, job.output[name])
