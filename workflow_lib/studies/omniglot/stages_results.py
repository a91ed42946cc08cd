"""Stage ``omniglot_tables``: the CSV tables of the one-shot Omniglot study
(``omniglot.tables``); its claims table is made by ``workflow_lib.claims.stage`` and its panels
(Fig. 3b-f of the attention-paths paper) are drawn by ``workflow_lib.pages.figure``."""

from __future__ import annotations

from workflow_lib.core.artefacts import read_artefact, write_csv
from workflow_lib.core.registry import Job
from workflow_lib.studies.omniglot import artefacts, tables


def omniglot_tables(job: Job) -> None:
    """CSV tables of the study (``omniglot.tables``)."""
    model_art, params, net = artefacts.read_model(job.input["model"])
    th = read_artefact(job.input["theory"], artefacts.OMNIGLOT_THEORY)
    samples = job.input.get("samples") or []
    sa = read_artefact(samples[0], artefacts.OMNIGLOT_SAMPLES) if samples else None
    pruning = read_artefact(job.input["pruning"], artefacts.OMNIGLOT_PRUNING)
    for name, df in tables.tables(model_art, th, sa, pruning, params, net).items():
        write_csv(df, job.output[name])
