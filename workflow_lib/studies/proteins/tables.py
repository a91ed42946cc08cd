"""Tidy tables of the protein study from its artefacts: per fit (``models``), the precision of
the top-ranked pairs (``curves``), every scored pair of the first split (``pairs``) and per
family (``families``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib.artefacts import Artefact
from workflow_lib.proteins import contacts

FIT_ATTRS = ("heldout_loss", "train_loss", "converged", "seconds", "n_params")


def _pairs(fit: Artefact, data: Artefact, cfg: dict) -> pd.DataFrame:
    """Every pair ``i < j`` at ``min_separation`` alignment columns or more with its score, rank,
    distance (NaN: unknown) and whether it is a contact; residues numbered by their alignment
    columns (1-based)."""
    columns = data["columns"]
    i, j, score = contacts.ranked_pairs(fit["scores"], cfg["min_separation"], columns)
    d = data["distances"][i, j] if "distances" in data.data else np.full(len(i), np.nan)
    return pd.DataFrame({"i": columns[i], "j": columns[j], "score": score,
                         "rank": np.arange(1, len(i) + 1), "distance": d,
                         "contact": np.isfinite(d) & (d < cfg["threshold"])})


def build(data: list[Artefact], fits: list[Artefact], cfg: dict) -> dict[str, pd.DataFrame]:
    """The study's tables from its data and fit artefacts; ``cfg``: ``proteins.contacts``."""
    by_family = {art.attrs["family"]: art for art in data}
    families = pd.DataFrame([
        {"family": name, **{k: art.attrs[k] for k in ("M_raw", "L_raw", "M", "L", "M_eff",
                                                      "distances_known")},
         "held_out": int(art["test"][0].sum()), "splits": art["test"].shape[0],
         "contact_fraction": _contact_fraction(art, cfg)}
        for name, art in by_family.items()])
    rows, curves, pairs = [], [], []
    for fit in fits:
        family, model = fit.attrs["family"], fit.attrs["model"]
        d, r = by_family[family], int(fit.attrs["realisation"])
        L = int(d.attrs["L"])
        row = {"family": family, "model": model, "realisation": r, "L": L,
               **{k: fit.attrs[k] for k in FIT_ATTRS}}
        if "distances" in d.data:
            args = (fit["scores"], d["distances"], cfg["min_separation"], cfg["threshold"])
            ks = contacts.precision_ks(L)
            at = contacts.precision_at(*args, list(ks.values()), d["columns"])
            row |= {f"P@{name}": at[k] for name, k in ks.items()}
            curve = contacts.precision_curve(*args, 2 * L, d["columns"])
            curves.append(pd.DataFrame({"family": family, "model": model, "realisation": r,
                                        "L": L, "rank": np.arange(1, 2 * L + 1),
                                        "precision": curve}))
        rows.append(row)
        if r == 0:
            pairs.append(_pairs(fit, d, cfg).assign(family=family, model=model, L=L))
    order = lambda df, keys: df.sort_values(keys, kind="stable").reset_index(drop=True)  # noqa: E731
    models = order(pd.DataFrame(rows), ["family", "model", "realisation"])
    empty = pd.DataFrame(columns=["family", "model", "realisation", "L", "rank", "precision"])
    return {
        "models": models,
        "curves": order(pd.concat(curves), ["family", "model", "realisation", "rank"])
        if curves else empty,
        "pairs": order(pd.concat(pairs), ["family", "model", "rank"]),
        "families": families,
    }


def _contact_fraction(art: Artefact, cfg: dict) -> float:
    """Fraction of the pairs at ``min_separation`` or more with a known distance that are
    contacts (how easy the family is: P@L saturates when it is large)."""
    if "distances" not in art.data:
        return float("nan")
    d, sep, columns = art["distances"], cfg["min_separation"], art["columns"]
    known = contacts.contact_map(d, np.inf, sep, columns)  # far enough, with a distance
    contact = contacts.contact_map(d, cfg["threshold"], sep, columns)
    return float(contact.sum() / known.sum()) if known.any() else float("nan")
