"""Tidy tables of the protein study from its artefacts: per fit (``models``), per family and model
averaged over the splits (``family_models``), the heads of factored attention chosen on each
split's validation sequences (``factored_choice``), the transformers' training curves
(``training_curves``), the precision of the top-ranked pairs (``curves``), every scored pair of
the first split (``pairs``, realisation ``PAIRS_REALISATION``) and per family (``families``)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from workflow_lib.core.artefacts import Artefact
from workflow_lib.proteins import contacts, factored_form
from workflow_lib.proteins.contacts import JACOBIAN_SUFFIX

FIT_ATTRS = ("heldout_loss", "validation_loss", "train_loss", "converged", "stop_reason", "seconds",
             "n_params")
CURVE = ("step", "train_loss", "validation_loss")  # a transformer's curve/* datasets
PAIRS_REALISATION = 0  # the split whose every scored pair the pairs table holds
CURVE_COLUMNS = ("family", "model", "realisation", "L", "rank", "precision", "P@k_random",
                 "contacts")
PAIR_COLUMNS = ("i", "j", "score", "rank", "distance", "contact", "family", "model",
                "realisation", "L", "contacts")
# the contact definition of a family without a structure on its results page (family_models)
NO_STRUCTURE = "none: no structure given, precision unknown"


def _pairs(scores: np.ndarray, data: Artefact, cfg: dict) -> pd.DataFrame:
    """Every pair ``i < j`` at ``min_separation`` alignment columns or more with its score
    (``scores: (L, L)``), rank, distance (NaN: unknown) and whether it is a contact; residues
    numbered by their alignment columns (1-based)."""
    columns = data["columns"]
    i, j, score = contacts.ranked_pairs(scores, cfg["min_separation"], columns)
    d = data["distances"][i, j] if "distances" in data.data else np.full(len(i), np.nan)
    return pd.DataFrame({"i": columns[i], "j": columns[j], "score": score,
                         "rank": np.arange(1, len(i) + 1), "distance": d,
                         "contact": np.isfinite(d) & (d < cfg["threshold"])})


def contact_definition(kind: str, cfg: dict) -> str:
    """The contact definition in words, printed beside every precision: e.g. ``"minimum
    inter-atomic distance < 8 Å, j - i >= 6"``; ``kind``: what the family's distance file holds,
    ``cfg``: ``proteins.contacts``."""
    return f"{kind} < {cfg['threshold']:g} Å, j - i >= {cfg['min_separation']}"


def build(data: list[Artefact], fits: list[Artefact], cfg: dict,
          kinds: dict[str, str]) -> dict[str, pd.DataFrame]:  # fmt: skip
    """The study's tables but its summary (``family_models_table``) from its data and fit
    artefacts; ``cfg``: ``proteins.contacts``, ``kinds``: family -> what its distance file holds.

    Beside every precision: ``P@k_random``, the expected precision of a random ranking at
    every k (the fraction of contacts among the ranked pairs, those at ``min_separation`` or more
    with a known distance), and ``contacts``, the contact definition."""
    by_family = {art.attrs["family"]: art for art in data}
    yardsticks = {name: {"P@k_random": random_precision(art["distances"], art["columns"], cfg)
                         if "distances" in art.data else float("nan"),
                         "contacts": contact_definition(kinds[name], cfg)
                         if "distances" in art.data else ""}
                  for name, art in by_family.items()}
    families = pd.DataFrame([
        {"family": name, **{k: art.attrs[k] for k in ("M_raw", "L_raw", "M", "L", "M_eff",
                                                      "distances_known", "alignment_sha256")},
         "held_out": int(art["test"][0].sum()), "validation": int(art["validation"][0].sum()),
         "splits": art["test"].shape[0],
         **yardsticks[name]}
        for name, art in by_family.items()])
    rows, curves, pairs, training = [], [], [], []
    for fit in fits:
        family = fit.attrs["family"]
        d, r = by_family[family], int(fit.attrs["realisation"])
        L = int(d.attrs["L"])
        if "curve/step" in fit.data:
            training.append(pd.DataFrame({"family": family, "model": fit.attrs["model"],
                                          "realisation": r, "budget": fit.attrs["budget"],
                                          **{k: fit[f"curve/{k}"] for k in CURVE}}))
        for name, scores in score_kinds(fit):
            row = {"family": family, "model": name, "realisation": r, "L": L,
                   **{k: fit.attrs[k] for k in FIT_ATTRS}}
            if "distances" in d.data:
                args = (scores, d["distances"], cfg["min_separation"], cfg["threshold"])
                ks = contacts.precision_ks(L)
                at = contacts.precision_at(*args, list(ks.values()), d["columns"])
                row |= {f"P@{k_name}": at[k] for k_name, k in ks.items()} | yardsticks[family]
                curve = contacts.precision_curve(*args, 2 * L, d["columns"])
                curves.append(pd.DataFrame({"family": family, "model": name, "realisation": r,
                                            "L": L, "rank": np.arange(1, 2 * L + 1),
                                            "precision": curve, **yardsticks[family]}))
            rows.append(row)
            if r == PAIRS_REALISATION:
                pairs.append(_pairs(scores, d, cfg).assign(
                    family=family, model=name, realisation=r, L=L,
                    contacts=yardsticks[family]["contacts"]))
    order = lambda df, keys: df.sort_values(keys, kind="stable").reset_index(drop=True)  # noqa: E731
    models = order(pd.DataFrame(rows), ["family", "model", "realisation"])
    return {
        "models": models,
        "factored_choice": factored_choice(models),
        "training_curves": order(pd.concat(training), ["family", "model", "realisation", "step"])
        if training else pd.DataFrame(columns=["family", "model", "realisation", "budget",
                                               *CURVE]),
        "curves": order(pd.concat(curves), ["family", "model", "realisation", "rank"])
        if curves else pd.DataFrame(columns=list(CURVE_COLUMNS)),
        "pairs": order(pd.concat(pairs), ["family", "model", "rank"])
        if pairs else pd.DataFrame(columns=list(PAIR_COLUMNS)),
        "families": families,
    }


def score_kinds(fit: Artefact) -> list[tuple[str, np.ndarray]]:
    """The contact scores of a fit under their table names: ``(model, scores)``, and for a
    transformer also ``(model-jacobian, its Jacobian scores)`` beside its attention map's."""
    kinds = [(fit.attrs["model"], fit["scores"])]
    if "jacobian_scores" in fit.data:
        kinds.append((f"{fit.attrs['model']}{JACOBIAN_SUFFIX}", fit["jacobian_scores"]))
    return kinds


def final_choice(choice: pd.DataFrame) -> pd.DataFrame:
    """Per family of ``choice`` (``factored_choice``), the factored configuration that its final
    fit on every sequence takes: the one chosen on the most splits, ties broken by the lowest
    validation loss averaged over the splits. Columns family, model, chosen (on how many splits),
    splits."""
    if choice.empty:
        return pd.DataFrame(columns=["family", "model", "chosen", "splits"])
    per = choice.groupby(["family", "model"]).agg(chosen=("chosen", "sum"),
                                                  validation_loss=("validation_loss", "mean"))
    per = per.reset_index().sort_values(["family", "chosen", "validation_loss"],
                                        ascending=[True, False, True], kind="stable")
    best = per.groupby("family", sort=True).head(1).set_index("family")
    best["splits"] = choice.groupby("family")["realisation"].nunique()
    return best.reset_index()[["family", "model", "chosen", "splits"]]


def family_models_table(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """``family_models`` of the ``models`` table: the summary of the fits across splits."""
    return family_models(tables["models"])


def factored_choice(models: pd.DataFrame) -> pd.DataFrame:
    """One row per factored fit (``factored-H<h>``, ``factored_softmax-H<h>``,
    ``factored_lowrank-H<h>``: ``proteins.factored_form``) with its
    ``heads``, ``attention``, training, validation and held-out losses, and ``chosen``: per
    (family, realisation), the fit of lowest validation loss, the configuration the claims
    compare (a choice on the validation sequences alone; the held-out loss is beside it for the
    over-fitting check, not for the choice)."""
    columns = ["family", "realisation", "model", "heads", "attention", "train_loss",
               "validation_loss", "heldout_loss", "chosen"]
    if models.empty:
        return pd.DataFrame(columns=columns)
    forms = models["model"].map(factored_form)
    factored = models[forms.notna()].copy()
    factored["attention"] = [form for form, _ in forms.dropna()]
    factored["heads"] = [heads for _, heads in forms.dropna()]
    best = factored.groupby(["family", "realisation"])["validation_loss"].idxmin()
    factored["chosen"] = factored.index.isin(best)
    return factored[columns].sort_values(["family", "realisation", "attention", "heads"],
                                         kind="stable").reset_index(drop=True)


def family_models(models: pd.DataFrame) -> pd.DataFrame:
    """One row per (family, model): the held-out loss and the precisions averaged over the
    family's splits (``splits`` of them), the unit of the protein claims; the yardsticks
    (``P@k_random``, ``contacts``) carried over, ``contacts`` reading ``NO_STRUCTURE`` for a
    family without distances. The columns read family, model, splits, L, the precisions with the
    family's random-ranking precision ``P@k_random`` right after them, then the losses, the
    seconds and the contact definition."""
    if models.empty:
        return models
    numbers = [c for c in ("heldout_loss", "validation_loss", "train_loss", "P@L/5", "P@L/2",
                           "P@L", "seconds")
               if c in models]
    carried = [c for c in ("L", "P@k_random", "contacts") if c in models]
    grouped = models.groupby(["family", "model"], sort=True)
    out = grouped[numbers].mean().join(grouped[carried].first())
    out.insert(0, "splits", grouped["realisation"].nunique())
    known = out["P@L"].notna() if "P@L" in out else pd.Series(False, out.index)
    out["contacts"] = out.get("contacts", pd.Series("", out.index)).where(known, NO_STRUCTURE)
    order = ("splits", "L", "P@L/5", "P@L/2", "P@L", "P@k_random", "heldout_loss", "train_loss",
             "seconds", "contacts")
    return out[[c for c in order if c in out]].reset_index()


def random_precision(distances: np.ndarray, columns: np.ndarray, cfg: dict) -> float:
    """The expected precision of a random ranking at every k: the fraction of contacts among
    the pairs at ``min_separation`` or more with a known distance (``distances: (L, L)`` Å, NaN
    unknown; ``columns: (L,)`` their alignment columns; ``cfg``: ``proteins.contacts``). A
    family where it is large saturates P@L whatever the scores."""
    sep = cfg["min_separation"]
    known = contacts.contact_map(distances, np.inf, sep, columns)  # far enough, with a distance
    contact = contacts.contact_map(distances, cfg["threshold"], sep, columns)
    return float(contact.sum() / known.sum()) if known.any() else float("nan")
