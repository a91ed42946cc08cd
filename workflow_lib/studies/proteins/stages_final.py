"""Stage ``protein_final_fit`` of the protein study (``proteins.final_fit``): one model of one
family on all of the family's sequences, in the configuration its split fits chose; the family's
contact lists are made from these fits by ``stages_contacts``. The science is in
``workflow_lib.proteins.fitting`` (``fit_final``)."""

from __future__ import annotations

import logging
import zlib

import jax
import numpy as np
import pandas as pd

from workflow_lib.core.artefacts import Artefact, read_artefact, write_artefact
from workflow_lib.core.errors import StageError
from workflow_lib.core.keys import stage_key
from workflow_lib.core.registry import Job
from workflow_lib.proteins.fitting import fit_final
from workflow_lib.proteins.run_names import TRANSFORMERS
from workflow_lib.studies.proteins import tables
from workflow_lib.studies.proteins.artefacts import PROTEIN_DATA, PROTEIN_FINAL_FIT, PROTEIN_FIT
from workflow_lib.studies.proteins.settings import fit_settings

log = logging.getLogger("workflow_lib.proteins")


def configuration(model: str, splits: list[Artefact]) -> tuple[str, int | None, str]:
    """``(run name, steps, how it was chosen)`` of the final fit of ``model`` from its split
    fits ``splits`` (``run_names.chosen_from``): factored attention's configuration chosen on the
    most splits (``tables.final_choice``), a transformer's median stop (its best step) over its
    splits, plmDCA as it is."""
    if model == "factored":
        rows = [{k: fit.attrs[k] for k in ("family", "model", "realisation", "train_loss",
                                           "validation_loss", "heldout_loss")} for fit in splits]
        chosen = tables.final_choice(tables.factored_choice(pd.DataFrame(rows))).iloc[0]
        return (chosen["model"], None, f"lowest validation loss on {chosen['chosen']} of "
                f"{chosen['splits']} splits")
    if model in TRANSFORMERS:
        best = sorted(int(fit.attrs["best_step"]) for fit in splits)
        steps = int(np.ceil(np.median(best)))
        return model, steps, f"{steps} steps, the median best step of its splits {best}"
    return model, None, "no choice"


def protein_final_fit(job: Job) -> None:
    """Fit one model on every sequence of its family, weighted as the whole alignment
    (``alignment_weights``), in the configuration its split fits chose (``configuration``;
    ``fitting.fit_final``).

    Datasets: ``scores: (L, L)`` contact scores (and a transformer's ``jacobian_scores: (L, L)``
    and its one-point curve ``curve/*``); ``params/*`` (``J`` in float32). Attrs: ``model`` (the
    entry of ``proteins.models``), ``configuration`` (the run name fitted, e.g.
    ``factored-H4``), ``chosen`` (how), ``train_loss``, ``M``, ``M_eff`` and the fit's figures.
    Verified: finite symmetric scores and a finite training loss.
    """
    p, model = job.params, job.params["model"]
    art = read_artefact(job.input["data"], PROTEIN_DATA, required=("seqs", "alignment_weights"))
    splits = [read_artefact(f, PROTEIN_FIT) for f in job.input.get("splits", [])]
    name, steps, chosen = configuration(model, splits)
    seqs, weights = art["seqs"].astype(np.int32), art["alignment_weights"]
    key = jax.random.fold_in(stage_key(p["seed"], "protein_final_fit", 0),
                             zlib.crc32(model.encode()))
    res = fit_final(name, fit_settings(name, p["proteins"]), (seqs, weights), key, steps)
    scores = {"scores": res.scores}
    if res.jacobian_scores is not None:
        scores["jacobian_scores"] = res.jacobian_scores
    if not (all(np.all(np.isfinite(x)) and np.allclose(x, x.T) for x in scores.values())
            and np.isfinite(res.train_loss)):
        raise StageError(f"{p['family']} final {name}: non-finite or asymmetric contact scores, "
                         "or a non-finite training loss")
    log.info("%s final %s (%s; %s): training loss %.4f nats per site on all %d sequences "
             "(%.0f s)", p["family"], model, name, chosen, res.train_loss, len(seqs),
             res.metrics["seconds"])
    params = {f"params/{k}": (v.astype(np.float32) if k == "J" else v)
              for k, v in res.params.items()}
    write_artefact(
        job.output["fit"], PROTEIN_FINAL_FIT,
        {**scores, **params, **{f"curve/{k}": v for k, v in res.curve.items()}}, p,
        seeds={"seed": p["seed"], "model_tag": zlib.crc32(model.encode())},
        attrs={"family": p["family"], "model": model, "configuration": name, "chosen": chosen,
               "train_loss": res.train_loss, "M": len(seqs), "M_eff": float(np.sum(weights)),
               **res.metrics},
    )
