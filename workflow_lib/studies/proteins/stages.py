"""Stages of the protein study: ``protein_data`` (an alignment read, gap-filtered, weighted and
split into fitted, validation and held-out sets) and ``protein_fit`` (one model on one split).
The science is in ``workflow_lib.proteins``."""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from pathlib import Path

import jax
import numpy as np

from workflow_lib.core.artefacts import read_artefact, write_artefact
from workflow_lib.core.errors import StageError
from workflow_lib.core.keys import stage_key
from workflow_lib.core.registry import Job
from workflow_lib.proteins.alignment import (
    ALPHABET,
    Focus,
    filter_gaps,
    find_focus,
    read_alignment,
    read_distances,
)
from workflow_lib.proteins.fitting import fit_model
from workflow_lib.proteins.models import weighted_mean
from workflow_lib.proteins.splits import held_out_split
from workflow_lib.proteins.weights import sequence_weights
from workflow_lib.runtime.checkpoints import resumable
from workflow_lib.studies.proteins.artefacts import PROTEIN_DATA, PROTEIN_FIT
from workflow_lib.studies.proteins.settings import fit_settings

log = logging.getLogger("workflow_lib.proteins")


def split_seed(seed: int, realisation: int, part: str = "protein_split") -> int:
    """The integer seed of realisation ``realisation``'s held-out split (``part``
    ``protein_validation``: of its validation split)."""
    key = stage_key(seed, part, realisation)
    return int(jax.random.randint(key, (), 0, 2**31 - 1))


def validation_seed(seed: int, realisation: int) -> int:
    """The integer seed of realisation ``realisation``'s validation split."""
    return split_seed(seed, realisation, "protein_validation")


def protein_data(job: Job) -> None:
    """Read the family's alignment, drop gappy columns and sequences, weigh the sequences and
    draw ``realisations`` splits into fitted, validation and held-out rows
    (``splits.held_out_split``).

    With a ``focus`` (``alignment.find_focus``, plmc's ``-f``) the columns are first those where
    the focus sequence has an amino acid in upper case, then the gap filter's among them.

    Datasets: ``seqs: (M, L)`` int8 in ``ALPHABET`` order; ``alignment_weights: (M,)`` (the
    whole alignment's, whose sum is M_eff); ``rows: (M,)`` (0-based records kept),
    ``columns: (L,)`` (1-based alignment columns kept: the residue numbering of every table);
    per realisation ``train`` (the fitted rows), ``validation``, ``test: (R, M)`` bool and
    ``weights: (R, M)`` (within each part); ``distances: (L, L)`` in Å (NaN: unknown) when the
    family has a distance file; with a focus, ``residues: (L,)`` its residue number at each
    column (the contact lists' numbering) and the attributes ``focus`` (its name),
    ``focus_row`` (its row of ``seqs``), ``focus_start`` and ``focus_sequence`` (its residues,
    residue ``focus_start + k`` at ``k``). Verified: weights in (0, 1], every split with fitted,
    validation and held-out rows; the focus's row in ``seqs`` reads its residues at ``residues``.
    """
    p = job.params
    path = Path(job.input["alignment"])
    aln = read_alignment(path)
    raw_distances = (read_distances(job.input["distances"], aln.seqs.shape[1])
                     if "distances" in job.input else None)  # bad input fails before the work
    focus = find_focus(path, p["focus"]) if "focus" in p else None
    candidates = (np.flatnonzero(focus.columns) if focus is not None
                  else np.arange(aln.seqs.shape[1]))
    seqs, rows, filtered = filter_gaps(aln.seqs[:, candidates], p["max_gap_sequence"],
                                       p["max_gap_column"])
    columns = candidates[filtered]
    M, L = seqs.shape
    weights = sequence_weights(seqs, p["identity"])
    splits = [held_out_split(seqs, p["held_out"], p["identity"], split_seed(p["seed"], r),
                             p["validation"], validation_seed(p["seed"], r))
              for r in range(p["realisations"])]
    for r, s in enumerate(splits):
        for part, key, kept in (("held-out", "held_out", s.test),
                                ("validation", "validation", s.validation)):
            if not (s.train.any() and kept.any()):
                raise StageError(
                    f"{path}: split r{r} keeps no {part} sequence (of {M}; each lies within "
                    f"identity {p['identity']} of a sequence left in training); raise "
                    f"proteins.{key} or proteins.identity")
    parts = np.stack([s.weights for s in splits])
    if not (np.all(weights > 0) and np.all(weights <= 1) and np.all(parts <= 1)):
        raise StageError(f"{path}: sequence weights outside (0, 1]")
    data = {"seqs": seqs.astype(np.int8), "alignment_weights": weights, "rows": rows,
            "columns": columns + 1, **{part: np.stack([getattr(s, part) for s in splits])
                                       for part in ("train", "validation", "test")},
            "weights": parts}
    focus_attrs = {}
    if focus is not None:
        data["residues"] = focus.numbers[columns]
        focus_attrs = {"focus": focus.name,
                       "focus_row": _focus_row(focus, seqs, rows, data["residues"]),
                       "focus_start": focus.start, "focus_sequence": focus.residues}
        log.info("%s: focus %s (record %d), residues %d-%d; %d of its %d aligned residues kept "
                 "by the gap filter", p["family"], focus.name, focus.record + 1,
                 data["residues"][0], data["residues"][-1], L, int(focus.columns.sum()))
    known = float("nan")
    if raw_distances is not None:
        data["distances"] = raw_distances[np.ix_(columns, columns)]
        upper = data["distances"][np.triu_indices(L, 1)]
        known = float(np.mean(np.isfinite(upper)))
        if known < 0.5:
            log.warning("%s: only %.0f %% of the residue pairs have a distance; check that the "
                        "file numbers the alignment's columns", job.input["distances"], 100 * known)
    m_eff = float(np.sum(weights))
    log.info("%s: %d x %d of %d x %d after the gap filter; M_eff %.1f at identity %.2f; "
             "held out per split %s (of them dropped within the identity of a training "
             "sequence: %s); validation %s (dropped: %s)", p["family"], M, L, *aln.seqs.shape,
             m_eff, p["identity"], [int(s.test.sum()) for s in splits],
             [s.dropped for s in splits], [int(s.validation.sum()) for s in splits],
             [s.validation_dropped for s in splits])  # fmt: skip
    write_artefact(
        job.output["data"], PROTEIN_DATA, data, p,
        seeds={"seed": p["seed"], **{f"split_r{r}": split_seed(p["seed"], r)
                                     for r in range(p["realisations"])},
               **{f"validation_r{r}": validation_seed(p["seed"], r)
                  for r in range(p["realisations"])}},
        attrs={"family": p["family"], "alphabet": ALPHABET, "M_raw": aln.seqs.shape[0],
               "L_raw": aln.seqs.shape[1], "M": M, "L": L, "M_eff": m_eff,
               "held_out_dropped": json.dumps([s.dropped for s in splits]),
               "validation_dropped": json.dumps([s.validation_dropped for s in splits]),
               "distances_known": known, "alignment": str(path),
               "alignment_sha256": hashlib.sha256(path.read_bytes()).hexdigest(), **focus_attrs},
    )


def _focus_row(focus: Focus, seqs: np.ndarray, rows: np.ndarray, residues: np.ndarray) -> int:
    """The row of ``seqs: (M, L)`` (records ``rows``) that holds the focus, checked: it is kept,
    its residue numbers ``residues: (L,)`` increase, and its codes are its residues there."""
    found = np.flatnonzero(rows == focus.record)
    if found.size != 1:
        raise StageError(f"{focus.name}: the focus sequence was dropped by the gap filter")
    letters = "".join(ALPHABET[code] for code in seqs[found[0]])
    expected = "".join(focus.residues[number - focus.start] for number in residues)
    if not (np.all(np.diff(residues) > 0) and letters == expected):
        raise StageError(f"{focus.name}: its residue numbers do not read its residues "
                         f"({letters[:20]} at the columns, {expected[:20]} by number)")
    return int(found[0])


@resumable
def protein_fit(job: Job) -> None:
    """Fit one model on the fitted rows of one split, scored on its validation rows
    (``fitting.fit_model``, its hyperparameters from its slice of ``proteins``:
    ``settings.fit_settings``), resuming from the job's checkpoint
    (``workflow_lib.runtime.checkpoints``).

    Datasets: ``scores: (L, L)`` contact scores (and a transformer's ``jacobian_scores: (L, L)``
    and training curve ``curve/{step,train_loss,validation_loss}: (n,)``);
    ``test_losses: (M_test,)`` nats per site of the held-out sequences; ``params/*`` (``J`` in
    float32). Attrs: ``heldout_loss`` (the mean of ``test_losses`` weighted by the held-out
    weights), ``train_loss``, ``validation_loss`` and the fit's figures.
    Verified: finite symmetric scores and a finite held-out loss.
    """
    p, model, r = job.params, job.params["model"], job.params["realisation"]
    art = read_artefact(job.input["data"], PROTEIN_DATA,
                        required=("seqs", "train", "validation", "test", "weights"))
    if r >= art["test"].shape[0]:
        raise StageError(f"{job.input['data']}: has {art['test'].shape[0]} splits, not r{r}")
    seqs, w = art["seqs"].astype(np.int32), art["weights"][r]
    train, validation, test = (art[part][r] for part in ("train", "validation", "test"))
    key = jax.random.fold_in(stage_key(p["seed"], "protein_fit", r), zlib.crc32(model.encode()))
    res = fit_model(model, fit_settings(model, p["proteins"]), (seqs[train], w[train]),
                    (seqs[validation], w[validation]), seqs[test], key)
    heldout = weighted_mean(res.test_losses, w[test])
    scores = {"scores": res.scores}
    if res.jacobian_scores is not None:
        scores["jacobian_scores"] = res.jacobian_scores
    if not (all(np.all(np.isfinite(x)) and np.allclose(x, x.T) for x in scores.values())
            and np.isfinite(heldout)):
        raise StageError(f"{p['family']} r{r} {model}: non-finite or asymmetric contact scores, "
                         "or a non-finite held-out loss")
    log.info("%s r%d %s: held-out loss %.4f, validation loss %.4f, training loss %.4f nats per "
             "site (%.0f s)", p["family"], r, model, heldout, res.validation_loss, res.train_loss,
             res.metrics["seconds"])
    params = {f"params/{k}": (v.astype(np.float32) if k == "J" else v)
              for k, v in res.params.items()}
    write_artefact(
        job.output["fit"], PROTEIN_FIT,
        {**scores, "test_losses": res.test_losses, **params,
         **{f"curve/{k}": v for k, v in res.curve.items()}}, p,
        seeds={"seed": p["seed"], "realisation": r, "model_tag": zlib.crc32(model.encode())},
        attrs={"family": p["family"], "model": model, "realisation": r, "heldout_loss": heldout,
               "train_loss": res.train_loss, "validation_loss": res.validation_loss,
               **res.metrics},
    )
