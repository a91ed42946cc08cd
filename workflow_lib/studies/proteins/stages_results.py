"""Stage ``protein_tables``: tidy tables of the fits; its claims table is made by
``workflow_lib.claims.stage`` and its panels (precision against rank, contact maps) are drawn by
``workflow_lib.pages.figure``."""

from __future__ import annotations

from workflow_lib.core.artefacts import read_artefact, write_csv
from workflow_lib.core.realisations import finish_tables
from workflow_lib.core.registry import Job
from workflow_lib.studies.proteins import tables
from workflow_lib.studies.proteins.artefacts import PROTEIN_DATA, PROTEIN_FIT
from workflow_lib.studies.proteins.registry import STUDY


def protein_tables(job: Job) -> None:
    """Tidy CSV tables of every data and fit artefact (``proteins.tables``), in the order of
    ``realisations.finish_tables``."""
    data = [read_artefact(f, PROTEIN_DATA, required=("columns", "test")) for f in job.input["data"]]
    fits = [read_artefact(f, PROTEIN_FIT, required=("scores",)) for f in job.input["fits"]]
    built = finish_tables(STUDY, tables.build(data, fits, job.params["contacts"],
                                              job.params["distance_kinds"]))
    for name, df in built.items():
        write_csv(df, job.output[name])
