"""Stage ``omniglot_tables``: the CSV tables of the one-shot Omniglot study and its claims table
(``omniglot.tables``); its panels (Fig. 3b-f of the attention-paths paper) are drawn by
``workflow_lib.figures``."""

from __future__ import annotations

import logging

from workflow_lib.artefacts import read_artefact, write_csv
from workflow_lib.claims import log_claims
from workflow_lib.registry import Job
from workflow_lib.studies.omniglot import artefacts, tables

log = logging.getLogger("workflow_lib.attention")


def omniglot_tables(job: Job) -> None:
    """CSV tables of the study and the claims table (``omniglot.tables``); one log line per
    claim with its verdict."""
    model_art, params, net = artefacts.read_model(job.input["model"])
    th = read_artefact(job.input["theory"], artefacts.OMNIGLOT_THEORY)
    samples = job.input.get("samples") or []
    sa = read_artefact(samples[0], artefacts.OMNIGLOT_SAMPLES) if samples else None
    pruning = read_artefact(job.input["pruning"], artefacts.OMNIGLOT_PRUNING)
    out = tables.tables(model_art, th, sa, pruning, params, net)
    log_claims(out["claims"], log)
    for name, df in out.items():
        write_csv(df, job.output[name])
