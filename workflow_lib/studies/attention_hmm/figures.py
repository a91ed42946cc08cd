"""Figures of the attention-paths study (the paper's Fig. 2c-e), one function per panel; each
returns a matplotlib Figure drawn from the tidy tables of ``attention_hmm.tables``.

Curves are means over realisations (bars: min-max when there are several); heat maps show
realisation 0, paths in the paper's order (g, d, a1, a2).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from workflow_lib.attention.designs import EXPERIMENTS  # noqa: E402
from workflow_lib.attention.panels import heatmap, overlap_bars  # noqa: E402

GP_STYLES = {"all": "-", "g": "--", "g+d": ":"}
GP_LABELS = {"all": "GP, all paths", "g": "GP, path g", "g+d": "GP, paths g+d"}
HEATMAP_WIDTHS = (10, 100, 1000)


def _curve(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """N, mean and (2, n) min-max offsets of ``accuracy`` (in %) over realisations."""
    g = (100 * df["accuracy"]).groupby(df["N"])
    mean = g.mean()
    return mean.index.to_numpy(), mean.to_numpy(), np.stack([mean - g.min(), g.max() - mean])


def _matrix(op: pd.DataFrame, order: tuple[str, ...]) -> np.ndarray:
    m = op.pivot(index="row", columns="col", values="value")
    return m.loc[list(order), list(order)].to_numpy()


def accuracy_and_order_parameter(
    accuracy: pd.DataFrame, order_parameters: pd.DataFrame, experiment: str, letter: str = "c"
) -> plt.Figure:
    """Top: test accuracy vs N (theory: blue crosses and line; samples: black dots; red: GP
    limits of the network and its sub-networks). Bottom: U (theory) at N = 10, 100, 1000 (the
    nearest computed widths) and the sampled U at the smallest sampled width."""
    acc = accuracy[accuracy["experiment"] == experiment]
    ops = order_parameters[
        (order_parameters["experiment"] == experiment) & (order_parameters["realisation"] == 0)
    ]
    widths = np.sort(ops.loc[ops["method"] == "theory", "N"].unique())
    shown = sorted({float(widths[np.argmin(np.abs(np.log(widths / w)))]) for w in HEATMAP_WIDTHS})
    sampled = np.sort(ops.loc[ops["method"] == "samples", "N"].unique())
    maps = [("theory", N) for N in shown] + [("samples", N) for N in sampled[:1]]
    fig = plt.figure(figsize=(max(5.0, 1.9 * len(maps)), 5.4), constrained_layout=True)
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.25, 1])
    ax = top.subplots()
    for method, style in (
        ("theory", dict(color="C0", marker="x", ls="-")),
        ("samples", dict(color="k", marker="o", ls="none", ms=4)),
    ):
        rows = acc[acc["method"] == method]
        if len(rows):
            N, mean, err = _curve(rows)
            ax.errorbar(N, mean, yerr=err, label=method, capsize=2, **style)
    for net, rows in acc[acc["method"] == "gp"].groupby("network"):
        label = GP_LABELS[net] + (" (g+d)" if net == "all" and experiment == "two_paths" else "")
        ax.axhline(
            100 * rows["accuracy"].mean(), color="C3", ls=GP_STYLES[net], lw=1.2, label=label
        )
    values = 100 * acc["accuracy"]
    pad = 0.05 * (values.max() - values.min()) + 0.5
    ax.set_ylim(values.min() - pad, values.max() + pad)
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy (%)")
    sigma = "1" if experiment == "four_paths" else "5"
    ax.set_title(
        f"({letter}) hidden Markov chain, {experiment.replace('_', ' ')}, "
        f"$\\sigma_\\perp = {sigma}$",
        fontsize=9,
    )
    ax.legend(fontsize=7, frameon=False)
    order = EXPERIMENTS[experiment].display
    mats = [_matrix(ops[(ops["method"] == m) & (ops["N"] == N)], order) for m, N in maps]
    vmax = max(float(np.abs(m).max()) for m in mats)
    axes = np.atleast_1d(bottom.subplots(1, len(maps)))
    for a, m, (method, N) in zip(axes, mats, maps, strict=True):
        im = heatmap(
            a, m, order, vmax, f"U {'sampled' if method == 'samples' else 'theory'}, N = {N:g}"
        )
    bottom.colorbar(im, ax=axes, shrink=0.8)
    return fig


def fig2c(accuracy: pd.DataFrame, order_parameters: pd.DataFrame) -> plt.Figure:
    """Fig. 2c: ``accuracy_and_order_parameter`` of the four-path experiment."""
    return accuracy_and_order_parameter(accuracy, order_parameters, "four_paths", "c")


def fig2e(accuracy: pd.DataFrame, order_parameters: pd.DataFrame) -> plt.Figure:
    """Fig. 2e: ``accuracy_and_order_parameter`` of the two-path experiment."""
    return accuracy_and_order_parameter(accuracy, order_parameters, "two_paths", "e")


def pc_overlaps(overlaps: pd.DataFrame) -> plt.Figure:
    """(d) Cosine similarity |v_k·Y|/sqrt(P) of the kernel PCs with the labels, PCs by decreasing
    eigenvalue: finite width at the smallest N (blue) vs the GP limit (orange), per
    experiment (realisation 0)."""
    experiments = [e for e in EXPERIMENTS if e in set(overlaps["experiment"])]
    fig, axes = plt.subplots(
        1,
        len(experiments),
        figsize=(4.2 * len(experiments), 3.2),
        constrained_layout=True,
        squeeze=False,
    )
    for ax, experiment in zip(axes[0], experiments, strict=True):
        df = overlaps[(overlaps["experiment"] == experiment) & (overlaps["realisation"] == 0)]
        width = df.loc[df["regime"] == "fw", "N"].iloc[0]
        overlap_bars(ax, df, f"N = {width:g}",
                     f"(d) PC-label overlaps, {experiment.replace('_', ' ')}")
    return fig
