"""Stages of the protein study's fits on every sequence (``proteins.final_fit``):
``protein_final_fit`` (one model of one family, in the configuration its split fits chose, on
all of the family's sequences) and ``protein_contact_lists`` (the family's contact lists to take
away, their summary and its contact map, from those fits). The science is in
``workflow_lib.proteins`` (``fitting.fit_final``, ``contact_lists``)."""

from __future__ import annotations

import json
import logging
import zlib
from pathlib import Path

import jax
import numpy as np
import pandas as pd

from workflow_lib.artefacts import Artefact, read_artefact, write_artefact, write_csv
from workflow_lib.keys import stage_key
from workflow_lib.plotting import save_figure
from workflow_lib.proteins import contacts
from workflow_lib.proteins.alignment import ALPHABET
from workflow_lib.proteins.contact_lists import check_numbering, contact_list, write_contact_list
from workflow_lib.proteins.fitting import TRANSFORMERS, fit_final
from workflow_lib.registry import Job, StageError
from workflow_lib.studies.proteins import figures, tables
from workflow_lib.studies.proteins.artefacts import PROTEIN_DATA, PROTEIN_FINAL_FIT, PROTEIN_FIT

log = logging.getLogger("workflow_lib.proteins")


def configuration(model: str, splits: list[Artefact]) -> tuple[str, int | None, str]:
    """``(run name, steps, how it was chosen)`` of the final fit of ``model`` from its split
    fits ``splits`` (``fitting.chosen_from``): factored attention's configuration chosen on the
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
    res = fit_final(name, p["proteins"], (seqs, weights), key, steps)
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


SUMMARY_ATTRS = ("configuration", "chosen", "M", "M_eff", "n_params", "converged", "train_loss",
                 "seconds")


def protein_contact_lists(job: Job) -> None:
    """Write the family's contact lists, one per final fit and score (``contact_lists``:
    plmc's couplings-file columns, numbered by the family's focus sequence when it names one,
    else by alignment column; distance and contact where it has a structure), their summary and
    the family's contact map (``figures.contact_maps``: true contacts below the diagonal, each
    list's top L above it).

    ``summary.csv``: one row per list: list (its file's name), the fit's configuration and how
    it was chosen, numbering, L, the sequences and M_eff it was fitted on, its parameters,
    convergence, training loss and seconds, ``P@L`` of the list (NaN without a structure) and
    ``contacts``, the contact definition (``tables.NO_STRUCTURE`` without one).
    Verified: every list's numbering maps back to the focus sequence's residues
    (``check_numbering``), and the lists are those the outputs name.
    """
    p, cfg = job.params, job.params["contacts"]
    data = read_artefact(job.input["data"], PROTEIN_DATA, required=("seqs", "columns"))
    fits = [read_artefact(f, PROTEIN_FINAL_FIT, required=("scores",)) for f in job.input["fits"]]
    columns, L = data["columns"], int(data.attrs["L"])
    focus = data.attrs.get("focus")
    numbers = data["residues"] if focus else None
    letters = ("".join(ALPHABET[c] for c in data["seqs"][int(data.attrs["focus_row"])])
               if focus else None)
    distances = data.data.get("distances")
    definition = (tables.contact_definition(p["distance_kind"], cfg) if distances is not None
                  else tables.NO_STRUCTURE)
    numbering = (f"residues of the focus sequence {focus}" if focus
                 else "alignment columns (1-based)")
    paths = {Path(path).stem: path for path in job.output.values() if path.endswith(".tsv")}
    lists, rows = {}, []
    for fit in fits:
        for name, scores in tables.score_kinds(fit):
            table = contact_list(scores, columns, cfg["min_separation"], numbers, letters,
                                 distances, cfg["threshold"])
            try:
                check_numbering(table, data.attrs.get("focus_sequence"),
                                int(data.attrs.get("focus_start", 1)))
            except ValueError as exc:
                raise StageError(f"{p['family']} {name}: {exc}") from None
            lists[name] = table
            precision = (contacts.precision_at(scores, distances, cfg["min_separation"],
                                               cfg["threshold"], [L], columns)[L]
                         if distances is not None else float("nan"))
            rows.append({"list": f"{name}.tsv", **{k: fit.attrs[k] for k in SUMMARY_ATTRS},
                         "numbering": numbering, "L": L, "P@L": precision,
                         "contacts": definition})
    if set(lists) != set(paths):
        raise StageError(f"{p['family']}: the final fits give the lists {sorted(lists)}, the "
                         f"rule names {sorted(paths)}")
    for name, table in lists.items():
        write_contact_list(table, paths[name])
    write_csv(pd.DataFrame(rows), job.output["summary"])
    known = "distance" in next(iter(lists.values()))
    frame = pd.concat([table.assign(model=name, rank=np.arange(1, len(table) + 1))
                       for name, table in lists.items()], ignore_index=True)
    frame = frame.assign(
        family=p["family"], L=L, contacts=definition,
        distance=frame["distance"] if known else np.nan,
        contact=frame["contact"].fillna(0).astype(bool) if known else False)
    axes = f"residue of {focus}" if focus else "alignment column"
    save_figure(figures.contact_maps(frame, axes),
                {"png": job.output["png"], "pdf": job.output["pdf"]})
    log.info("%s: %d contact lists of %d pairs each, numbered by %s (%s)", p["family"],
             len(lists), len(frame) // len(lists), numbering, json.dumps(sorted(lists)))
