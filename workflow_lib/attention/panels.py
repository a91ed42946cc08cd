"""Figure panels shared by both attention-paths studies (the hidden-Markov-chain task and
one-shot Omniglot): the order parameter U as a heat map and the kernel-PC overlaps with the
labels as bars."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def heatmap(ax: plt.Axes, U: np.ndarray, labels: tuple[str, ...], vmax: float, title: str,
            annotate: bool = True):
    """``U`` on a symmetric red-blue scale ``±vmax``, entries written in the cells if
    ``annotate``; returns the image (for a colour bar)."""
    im = ax.imshow(U, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
    if annotate:
        for (i, j), v in np.ndenumerate(U):
            colour = "w" if abs(v) > 0.6 * vmax else "k"
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6, color=colour)
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_title(title, fontsize=8)
    return im


def overlap_bars(ax: plt.Axes, overlaps: pd.DataFrame, fw_label: str, title: str) -> None:
    """PC-label overlaps (columns ``regime``, ``rank``, ``overlap``): finite width (blue) next
    to the GP limit (orange)."""
    for regime, colour, shift in (("fw", "C0", -0.2), ("gp", "C1", 0.2)):
        rows = overlaps[overlaps["regime"] == regime]
        label = "GP limit" if regime == "gp" else fw_label
        ax.bar(rows["rank"] + shift, rows["overlap"], width=0.4, color=colour, label=label)
    ax.set_xlabel("kernel PC (by decreasing eigenvalue)")
    ax.set_ylabel("overlap with labels")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False)
