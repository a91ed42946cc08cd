"""Figures of the one-shot Omniglot study (the paper's Fig. 3b-f), one function per panel, drawn
from the tidy tables of ``omniglot.tables``."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from workflow_lib.attention.panels import heatmap, overlap_bars  # noqa: E402


def accuracy(acc: pd.DataFrame) -> plt.Figure:
    """(b) Test accuracy vs N: finite-width theory at the validation-selected T (blue), GP at its
    selected T (red line), posterior samples (black), the gradient-descent model (grey line)."""
    chosen = acc[acc["selected"]]
    fig, ax = plt.subplots(figsize=(4.6, 3.4), constrained_layout=True)
    fw = chosen[chosen["method"] == "theory"].sort_values("N")
    ax.plot(fw["N"], 100 * fw["test"], "x-", color="C0", label="theory (T chosen on validation)")
    for _, row in fw.iterrows():
        ax.annotate(f"T={row['T']:g}", (row["N"], 100 * row["test"]), fontsize=6,
                    textcoords="offset points", xytext=(0, 5), ha="center", color="C0")
    for method, style in (("gp", dict(color="C3", ls="-")),
                          ("gradient descent", dict(color="0.5", ls="--"))):
        row = chosen[chosen["method"] == method]
        if len(row):
            label = "GP limit" if method == "gp" else f"gradient descent (N = {row['N'].iloc[0]:g})"
            ax.axhline(100 * row["test"].iloc[0], label=label, lw=1.2, **style)
    samples = chosen[chosen["method"] == "samples"]
    ax.plot(samples["N"], 100 * samples["test"], "o", color="k", ms=5, label="samples")
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("(b) one-shot Omniglot: theory vs GP", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    return fig


def order_parameters(ops: pd.DataFrame) -> plt.Figure:
    """(c) The path-path order parameter U (paths labelled h1 h2): theory and samples at the
    scoring width, and the overlaps of the gradient-descent model's effective weights (own
    colour scale: only its pattern is comparable)."""
    sources = list(dict.fromkeys(ops["source"]))
    fig, axes = plt.subplots(1, len(sources), figsize=(3.6 * len(sources), 3.4),
                             constrained_layout=True, squeeze=False)
    labels = tuple(dict.fromkeys(ops["row"]))
    bayes = [s for s in sources if s != "gradient descent"]
    vmax = max(float(ops.loc[ops["source"].isin(bayes), "value"].abs().max()), 1e-12)
    for ax, source in zip(axes[0], sources, strict=True):
        U = ops[ops["source"] == source].pivot(index="row", columns="col", values="value")
        U = U.loc[list(labels), list(labels)].to_numpy()
        scale = float(np.abs(U).max()) if source == "gradient descent" else vmax
        im = heatmap(ax, U, labels, scale, f"U, {source}", annotate=len(labels) <= 4)
        fig.colorbar(im, ax=ax, shrink=0.7)
    fig.suptitle("(c) order parameter U (paths h1 h2)", fontsize=9)
    return fig


def pc_overlaps(pcs: pd.DataFrame) -> plt.Figure:
    """(d) |v_k·Y|/sqrt(P) of the training-kernel PCs, finite width vs GP."""
    fig, ax = plt.subplots(figsize=(5.0, 3.2), constrained_layout=True)
    overlap_bars(ax, pcs, "finite width", "(d) PC-label overlaps")
    return fig


def head_scores(scores: pd.DataFrame, claims: pd.DataFrame) -> plt.Figure:
    """(e) Accuracy drop of the gradient-descent model when one head is pruned vs its score,
    with the rank correlation of the two (from the claims table)."""
    rho = claims.loc[claims["id"] == "fig3e.score_predicts_cost", "measured"].iloc[0]
    fig, ax = plt.subplots(figsize=(4.2, 3.2), constrained_layout=True)
    for layer, rows in scores.groupby("layer"):
        ax.scatter(rows["score"], 100 * rows["drop"], label=f"layer {layer}", s=25)
        for _, r in rows.iterrows():
            ax.annotate(f"({layer}){int(r['head'])}", (r["score"], 100 * r["drop"]), fontsize=6,
                        textcoords="offset points", xytext=(3, 3))
    ax.axhline(0, color="0.7", lw=0.8)
    ax.set_xlabel("head score (normalised)")
    ax.set_ylabel("accuracy drop when pruned (points)")
    ax.set_title(f"(e) head score vs pruning cost (Spearman {rho:.2f})", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    return fig


def cumulative_pruning(cumulative: pd.DataFrame) -> plt.Figure:
    """(f) Accuracy of the gradient-descent model after pruning heads in order of increasing
    (and, for contrast, decreasing) score, and in random orders (mean ± s.e.m.)."""
    fig, ax = plt.subplots(figsize=(4.4, 3.2), constrained_layout=True)
    for order, style in (("ascending", "o-"), ("descending", "s--")):
        rows = cumulative[cumulative["order"] == order]
        ax.plot(rows["removed"], 100 * rows["accuracy"], style,
                label="lowest score first" if order == "ascending" else "highest score first")
        for _, r in rows.iloc[1:].iterrows():
            ax.annotate(r["last"], (r["removed"], 100 * r["accuracy"]), fontsize=6,
                        textcoords="offset points", xytext=(2, 4))
    rand = cumulative[cumulative["order"] == "random"].groupby("removed")["accuracy"]
    ax.errorbar(rand.mean().index, 100 * rand.mean(), 100 * rand.sem().fillna(0.0), fmt="^:",
                color="0.4", capsize=2, label="random order (mean ± s.e.m.)")
    ax.set_xlabel("heads pruned")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("(f) pruning in head-score order", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    return fig

