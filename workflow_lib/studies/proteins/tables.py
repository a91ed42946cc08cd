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
    """Every pair ``i < j`` at ``min_separation`` or more with its score and, with distances,
    whether it is a contact; residues numbered by their alignment columns."""
    i, j, score = contacts.ranked_pairs(fit["scores"], cfg["min_separation"])
    out = pd.DataFrame({"i": data["columns"][i], "j": data["columns"][j], "score": score,
                        "rank": np.arange(1, len(i) + 1)})
    if "distances" in data.data:
        d = data["distances"][i, j]
        out["distance"], out["contact"] = d, np.isfinite(d) & (d < cfg["threshold"])
    return out


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
            at = contacts.precision_at(*args, list(ks.values()))
            row |= {f"P@{name}": at[k] for name, k in ks.items()}
            curve = contacts.precision_curve(*args, 2 * L)
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
    L = art["distances"].shape[0]
    i, j = np.triu_indices(L, cfg["min_separation"])
    d = art["distances"][i, j]
    d = d[np.isfinite(d)]
    return float(np.mean(d < cfg["threshold"])) if len(d) else float("nan")
