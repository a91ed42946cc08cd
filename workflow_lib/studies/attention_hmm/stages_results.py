"""Stage ``paths_tables``: tidy tables of the attention-paths artefacts; its claims table is made
by ``workflow_lib.claims.stage`` and its panels (Fig. 2c-e of the attention-paths paper) are
drawn by ``workflow_lib.pages.figure``."""

from __future__ import annotations

from workflow_lib.core.artefacts import read_artefact, write_csv
from workflow_lib.core.realisations import finish_tables
from workflow_lib.core.registry import Job
from workflow_lib.studies.attention_hmm import tables
from workflow_lib.studies.attention_hmm.artefacts import PATHS_SAMPLES, PATHS_THEORY
from workflow_lib.studies.attention_hmm.registry import STUDY


def paths_tables(job: Job) -> None:
    """Tidy CSV tables of every theory and samples artefact (``attention_hmm.tables``), in the
    order of ``realisations.finish_tables``."""
    theories = [read_artefact(f, PATHS_THEORY) for f in job.input["theory"]]
    samples = [read_artefact(f, PATHS_SAMPLES) for f in job.input.get("samples", [])]
    for name, df in finish_tables(STUDY, tables.build(theories, samples)).items():
        write_csv(df, job.output[name])
