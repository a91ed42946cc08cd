"""Figures of the protein contact-prediction study, one function per panel; each returns a
matplotlib Figure (no pyplot state) drawn from the study's tidy tables.

Contact precision follows ``workflow_lib.proteins.contacts``: pairs at least the minimal sequence
separation apart, ranked by APC-corrected score (Ekeberg et al. 2013; Dunn et al. 2008).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

TRUE_CONTACT_COLOUR = "0.75"
TRUE_POSITIVE_COLOUR = "C0"
FALSE_POSITIVE_COLOUR = "C3"
UNKNOWN_COLOUR = "C7"
PANEL_SIZE = 2.8  # inches per contact-map panel
PANELS_PER_ROW = 4  # precision-against-rank panels (one per family) per row


def _models(df: pd.DataFrame) -> list[str]:
    """The models in natural order (factored-H4 before factored-H16), so that each has the same
    colour in every panel."""
    return sorted(set(df["model"]), key=lambda m: [int(t) if t.isdigit() else t
                                                   for t in re.split(r"(\d+)", m)])


def precision_vs_rank(curves: pd.DataFrame) -> Figure:
    """Contact precision of the top-ranked pairs vs rank / L, one panel per family
    (``PANELS_PER_ROW`` to a row), one line per model: the mean over realisations, with a shaded
    band of ± one s.e.m. where there are several; a dashed line at the expected precision of a
    random ranking, and the contact definition in each panel's title.

    ``curves`` has columns family, model, realisation, rank, precision and L (and, when given,
    P@k_random and contacts).
    """
    families = list(dict.fromkeys(curves["family"]))
    if not families:  # no family has a distance file
        fig = Figure(figsize=(4.0, 2.0), layout="constrained")
        fig.text(0.5, 0.5, "no family has residue distances:\nno precision to draw",
                 ha="center", va="center")
        return fig
    models = _models(curves)
    colours = {m: f"C{k % 10}" for k, m in enumerate(models)}
    n_cols = min(len(families), PANELS_PER_ROW)
    n_rows = -(-len(families) // n_cols)
    fig = Figure(figsize=(3.6 * n_cols, 3.2 * n_rows), layout="constrained")
    grid = fig.subplots(n_rows, n_cols, sharey=True, squeeze=False)
    for ax in grid.flat[len(families):]:  # the last row's empty places
        ax.set_visible(False)
    axes = grid.flat[:len(families)]
    for ax, family in zip(axes, families, strict=True):
        fam = curves[curves["family"] == family]
        L = int(fam["L"].iloc[0])
        for model in models:
            df = fam[fam["model"] == model]
            if df.empty:
                continue
            g = df.groupby("rank")["precision"]
            mean, sem, n = g.mean(), g.sem(), g.count()
            x = mean.index.to_numpy() / L
            n_real = df["realisation"].nunique()
            label = model if n_real == 1 else f"{model} (n = {n_real})"
            ax.plot(x, mean.to_numpy(), color=colours[model], lw=1.3, label=label)
            band = (n > 1).to_numpy()
            if band.any():
                lo = (mean - sem).to_numpy()
                hi = (mean + sem).to_numpy()
                ax.fill_between(x, lo, hi, where=band, color=colours[model], alpha=0.2, lw=0)
        if "P@k_random" in fam:
            ax.axhline(fam["P@k_random"].iloc[0], color="k", ls="--", lw=0.9,
                       label="random ranking")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("rank / L")
        definition = f"\n{fam['contacts'].iloc[0]}" if "contacts" in fam else ""
        ax.set_title(f"{family} (L = {L}){definition}", fontsize=8)
        ax.grid(alpha=0.3, lw=0.5)
    for ax in grid[:, 0]:
        ax.set_ylabel("precision of the top-ranked pairs")
    axes[0].legend(fontsize=7, frameon=False)
    return fig


def _contact_fraction(fam: pd.DataFrame) -> float:
    """The fraction of contacts among one model's ranked pairs with a known distance: the
    expected precision of a random ranking (the same for every model of the family)."""
    one = fam[(fam["model"] == fam["model"].iloc[0]) & fam["distance"].notna()]
    return float(one["contact"].astype(bool).mean()) if len(one) else float("nan")


def _marker_size(span: float) -> float:
    """Area (points^2) of a square marker about one residue wide on a contact-map panel that
    spans ``span`` residues."""
    side = 0.85 * PANEL_SIZE * 72 / max(span, 1)
    return max(side, 1.5) ** 2


def contact_maps(pairs: pd.DataFrame, numbering: str = "alignment column") -> Figure:
    """Contact maps, one row per family and one panel per model: the true contacts (grey) in the
    lower triangle and the model's top-L pairs in the upper triangle, true positives in blue and
    false positives in red; each panel's title gives the model's top-L precision and the expected
    precision of a random ranking.

    ``pairs`` has columns family, model, i, j, score, contact (bool, a true contact) and L, one row
    per evaluated pair ``i < j`` of each model, ``i`` and ``j`` residue numbers (alignment
    columns, or a focus sequence's residues: each panel spans the smallest to the largest, its
    axes labelled ``numbering``); the true contacts are the pairs marked as contacts for any
    model of the family.
    """
    families = list(dict.fromkeys(pairs["family"]))
    models = _models(pairs)
    fig = Figure(figsize=(PANEL_SIZE * len(models), (PANEL_SIZE + 0.5) * len(families) + 0.6),
                 layout="constrained")
    axes = fig.subplots(len(families), len(models), squeeze=False)
    for row, family in enumerate(families):
        fam = pairs[pairs["family"] == family]
        L = int(fam["L"].iloc[0])
        known = fam["distance"].notna()  # a family without a distance file has none
        contact = fam["contact"].fillna(False).astype(bool)
        true = fam[contact][["i", "j"]].drop_duplicates()
        numbers = fam[["i", "j"]].to_numpy()
        low, edge = int(numbers.min()) - 0.5, int(numbers.max()) + 0.5
        size = _marker_size(edge - low)
        random = _contact_fraction(fam)
        for col, model in enumerate(models):
            ax = axes[row, col]
            ax.scatter(true["i"], true["j"], s=size, marker="s", color=TRUE_CONTACT_COLOUR,
                       lw=0)
            ranked = fam[(fam["model"] == model) & (known if known.any() else True)]
            top = ranked.sort_values("rank", kind="stable").head(L)
            hit = contact[top.index].to_numpy()
            colours = ((hit, TRUE_POSITIVE_COLOUR), (~hit, FALSE_POSITIVE_COLOUR))
            if not known.any():
                colours = ((np.ones(len(top), bool), UNKNOWN_COLOUR),)
            for mask, colour in colours:
                ax.scatter(top["j"][mask], top["i"][mask], s=size, marker="s", color=colour,
                           lw=0)
            ax.plot([low, edge], [low, edge], color="k", lw=0.5)
            ax.set_xlim(low, edge)
            ax.set_ylim(edge, low)  # the first residue top left, as an image
            ax.set_aspect("equal")
            ax.tick_params(labelsize=6)
            precision = (f"{hit.mean():.2f} (random {random:.2f})" if known.any() and len(hit)
                         else "unknown (no structure)")
            ax.set_title(f"{family}: {model}\ntop-L precision {precision}", fontsize=8)
            if row == len(families) - 1:
                ax.set_xlabel(numbering, fontsize=7)
            if col == 0:
                ax.set_ylabel(numbering, fontsize=7)
    entries = [(TRUE_CONTACT_COLOUR, "true contact (lower)"),
               (TRUE_POSITIVE_COLOUR, "top-L pair, true positive (upper)"),
               (FALSE_POSITIVE_COLOUR, "top-L pair, false positive (upper)")]
    if pairs["distance"].isna().groupby(pairs["family"]).all().any():
        entries.append((UNKNOWN_COLOUR, "top-L pair, no structure (upper)"))
    handles = [Line2D([], [], marker="s", ls="", color=c, label=lab) for c, lab in entries]
    if "contacts" in pairs:
        definitions = sorted(set(pairs["contacts"].dropna()) - {""})
        fig.suptitle("contacts: " + "; ".join(definitions), fontsize=8)
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    return fig
