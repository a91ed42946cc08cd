"""Writing a finished figure: PNG and PDF, atomically, then closing it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from workflow_lib.core.artefacts import atomic_path  # noqa: E402


def save_figure(fig: plt.Figure, outputs: dict[str, str]) -> None:
    """Write ``fig`` to each path of ``outputs`` in the format its key names (``png``, ``pdf``;
    150 dpi), then close it."""
    for key, path in outputs.items():
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=150, format=key)
    plt.close(fig)
