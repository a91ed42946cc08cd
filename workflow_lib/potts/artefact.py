"""The Potts samples artefact, the one artefact kind read beyond the study that writes it (by the
fits, ``inspect`` and the benchmarks): its schema tag and its reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workflow_lib.core.artefacts import read_artefact

POTTS_SAMPLES = "potts-samples/1"


def load_samples(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """``(train: (M, L), test: (M_test, L), J: (L, L), U: (C, C), beta)`` of a Potts samples
    artefact, sequences as int32."""
    art = read_artefact(path, POTTS_SAMPLES, required=("train", "test", "J", "U"))
    return (art["train"].astype(np.int32), art["test"].astype(np.int32), art["J"], art["U"],
            float(art.attrs["beta"]))
