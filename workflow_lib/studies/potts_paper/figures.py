"""The figures of the Potts paper, one function per panel; each returns a matplotlib Figure.

Losses are cross-entropies in nats per masked site (Fig. 2, Fig. 3 right) or mean squared errors
(Fig. 3 left).
Attention maps are shown after the best scalar fit to J (``mlm.metrics.reconstruction``) with a
diverging colour map centred at zero.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from workflow_lib.studies.potts_paper.claims import (  # noqa: E402
    capacity_window,
    sample_complexity_claims,
)
from workflow_lib.studies.potts_paper.tables import (  # noqa: E402
    attention_maps,
    interpolation_curve,
)

ARCH_LABELS = {
    "factored": "factored attention (1 layer)",
    "factored_softmax": "factored, row-softmax A (ablation)",
    "vanilla1": "vanilla transformer, 1 layer",
    "vanilla3": "vanilla transformer, 3 layers",
}
COLOURS = {"factored": "C0", "factored_softmax": "C4", "vanilla1": "C1", "vanilla3": "C2"}


def _main_archs(df: pd.DataFrame) -> list[str]:
    return [a for a in ARCH_LABELS if a in set(df["arch"])]


FLOOR_LABEL = "data set's floor (PLM from the truth)"


def _floor_excess(runs: pd.DataFrame) -> pd.Series:
    """Per realisation, the data set's floor minus the optimal loss (``tables.with_floor``);
    empty without floor fits."""
    if "floor_loss" not in runs:
        return pd.Series(dtype=float)
    per_r = runs.groupby("realisation")[["floor_loss", "optimal_loss"]].first().dropna()
    return per_r["floor_loss"] - per_r["optimal_loss"]


def fig2a_test_loss(history: pd.DataFrame, realisation: int = 0) -> plt.Figure:
    """Test loss vs epoch per architecture on one realisation; optimal loss dashed, the data
    set's floor dotted (when the table has one)."""
    fig, ax = plt.subplots(figsize=(4.5, 3.4), constrained_layout=True)
    runs = history[history["realisation"] == realisation]
    for arch in _main_archs(runs):
        h = runs[runs["arch"] == arch]
        ax.plot(h["epoch"], h["test_loss"], color=COLOURS[arch], label=ARCH_LABELS[arch])
    optimal = runs["optimal_loss"].iloc[0]
    ax.axhline(optimal, color="k", ls="--", lw=1, label="optimal (true model)")
    for excess in _floor_excess(runs):
        ax.axhline(optimal + excess, color="k", ls=":", lw=1, label=FLOOR_LABEL)
    ax.set_xscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("test loss (nats per masked site)")
    ax.set_title("(a) masked-token test loss")
    ax.legend(fontsize=7, frameon=False)
    return fig


def _centred(m: np.ndarray) -> np.ndarray:
    """A non-negative (softmax) map minus its off-diagonal mean; signed maps unchanged."""
    if m.min() < 0:
        return m
    off = ~np.eye(m.shape[0], dtype=bool)
    return np.where(off, m - m[off].mean(), 0.0)


def fig2b_attention_maps(J: np.ndarray, maps: Mapping[str, np.ndarray]) -> plt.Figure:
    """Heat maps of J and of each architecture's attention map, each on its own symmetric colour
    scale; softmax maps (non-negative) are shown minus their off-diagonal mean."""
    panels = {"interaction matrix J": J,
              **{ARCH_LABELS.get(k, k): _centred(v) for k, v in maps.items()}}
    fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels), 2.9),
                             constrained_layout=True)
    for ax, (title, m) in zip(np.atleast_1d(axes), panels.items(), strict=True):
        vmax = float(np.max(np.abs(m))) or 1.0
        im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        fig.colorbar(im, ax=ax, shrink=0.7)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("position j", fontsize=7)
        ax.set_ylabel("masked position i", fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("(b) J and attention maps", fontsize=9)
    return fig


def fig2b_from_table(maps: pd.DataFrame) -> plt.Figure:
    """Fig. 2b from the ``attention_maps`` table: realisation 0, or the first it holds."""
    return fig2b_attention_maps(*attention_maps(maps, int(maps["realisation"].min())))


def fig2c_reconstruction(history: pd.DataFrame) -> plt.Figure:
    """Normalised reconstruction error ||J - c*A||^2 / ||J||^2 vs epoch, mean over realisations."""
    fig, ax = plt.subplots(figsize=(4.5, 3.4), constrained_layout=True)
    for arch in _main_archs(history):
        h = history[history["arch"] == arch].groupby("epoch")["recon_error"]
        mean, sem = h.mean(), h.sem().fillna(0)
        ax.plot(mean.index, mean, color=COLOURS[arch], label=ARCH_LABELS[arch])
        ax.fill_between(mean.index, mean - sem, mean + sem, color=COLOURS[arch], alpha=0.2)
    ax.set_xscale("log")
    ax.set_ylim(0, None)
    ax.set_xlabel("epoch")
    ax.set_ylabel(r"$\|J - c^*A\|^2 / \|J\|^2$")
    ax.set_title("(c) reconstruction error of J")
    ax.legend(fontsize=7, frameon=False)
    return fig


def fig2d_interpolation(final: pd.DataFrame) -> plt.Figure:
    """Excess test loss of the Adam solution (test - optimal, paired per realisation) vs
    perturbation level a of the interpolated layer, factored attention at a = 0
    (``tables.interpolation_curve``; mean ± s.e. over realisations); the data set's floor (the
    same excess of the PLM fit from the truth) dotted, its s.e. shaded, when the table has it."""
    runs = interpolation_curve(final)
    g = (runs["adam_test_loss"] - runs["optimal_loss"]).groupby(runs["a"])
    fig, ax = plt.subplots(figsize=(4.5, 3.4), constrained_layout=True)
    n = runs["realisation"].nunique()
    ax.errorbar(g.mean().index, g.mean(), yerr=g.sem().fillna(0), marker="o", capsize=3,
                label=f"interpolated layer (a = 0: factored attention), n = {n}")
    ax.axhline(0.0, color="k", ls="--", lw=1, label="optimal")
    floor = _floor_excess(runs)
    if len(floor):
        mean, sem = floor.mean(), (floor.sem() if len(floor) > 1 else 0.0)
        ax.axhline(mean, color="k", ls=":", lw=1, label=f"{FLOOR_LABEL}, n = {len(floor)}")
        ax.axhspan(mean - sem, mean + sem, color="k", alpha=0.1, lw=0)
    ax.set_xlabel("perturbation level a")
    ax.set_ylabel("test - optimal loss (nats per site)")
    ax.set_title("(d) decoupling positions and colours")
    # below the axes: the optimal line spans the panel's width, wherever the points lie
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    return fig


def fig3_left_replica(replica: pd.DataFrame) -> plt.Figure:
    """Replica theory (lines) and simulations (points, mean ± s.e.) vs alpha = M/L."""
    fig, ax = plt.subplots(figsize=(4.5, 3.4), constrained_layout=True)
    for k, (lam, df) in enumerate(replica.groupby("lambda")):
        th = df[df["source"] == "theory"]
        sim = df[df["source"] == "simulation"]
        ax.plot(th["alpha"], th["eps"], color=f"C{k}", label=rf"theory, $\lambda$ = {lam:g}")
        ax.errorbar(sim["alpha"], sim["eps"], yerr=sim["sem"], fmt="o", ms=3.5, color=f"C{k}",
                    capsize=2)
    ax.axvline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\alpha = M / L$")
    ax.set_ylabel("test loss (mean squared error)")
    ax.set_title("(left) Gaussian model: theory vs simulations")
    ax.legend(fontsize=7, frameon=False)
    return fig


def fig3_right_sample_complexity(curve: pd.DataFrame, edge: pd.DataFrame) -> plt.Figure:
    """Held-out test loss of factored attention on Potts data vs alpha = M/L (mean ± s.e.), the
    optimal loss on the same sequences, the pre-registered capacity window of the peak test
    (shaded, ``claims.capacity_window``) labelled with the verdict of the test of the claims
    table's ``fig3_right.location`` row (the same test on the same tables, before the data
    checks that gate it), and the capacity edge (per
    realisation, the last M whose fit separates its training data as far as they allow: median
    over realisations)."""
    g = curve.groupby("alpha")["test_loss_heldout"]
    mean, sem = g.mean(), g.sem().fillna(0)
    fig, ax = plt.subplots(figsize=(4.5, 3.4), constrained_layout=True)
    ax.errorbar(mean.index, mean, yerr=sem, marker="o", ms=3.5, capsize=2,
                label=f"factored attention (n = {curve['realisation'].nunique()})")
    ax.axhline(curve["optimal_loss_heldout"].mean(), color="k", ls="--", lw=1,
               label="optimal (mean)")
    rows = {r["id"]: r for r in sample_complexity_claims(curve, edge)}
    if "fig3_right.location" in rows:
        lo, hi = capacity_window(float(curve["L"].iloc[0]), float(curve["C"].iloc[0]))
        ax.axvspan(lo, hi, color="grey", alpha=0.15, lw=0,
                   label=f"capacity window: peak {rows['fig3_right.location']['verdict']}")
    located = edge["edge_alpha"].dropna()
    if len(located):
        ax.axvline(float(located.median()), color="grey", lw=0.8, ls=":",
                   label=f"capacity edge (median of {len(located)})")
    ax.set_xscale("log")
    ax.set_xlabel(r"$\alpha = M / L$")
    ax.set_ylabel("held-out test loss (nats per masked site)")
    ax.set_title("(right) Potts data, cross-entropy loss")
    ax.legend(fontsize=7, frameon=False)
    return fig
