"""Tidy tables of the attention-paths artefacts: one row per (realisation, experiment, method,
network, N) for accuracies; per matrix entry for order parameters; per PC for the overlaps; per
run for the theory and sampler diagnostics. GP rows have ``N = inf``."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from workflow_lib.core.artefacts import Artefact
from workflow_lib.studies.attention_hmm.registry import STUDY

NAMES = STUDY.tables


def _realisation(art: Artefact) -> int:
    return int(json.loads(art.attrs["seeds"])["realisation"])


def _entries(U: np.ndarray, paths: Sequence[str], base: dict) -> list[dict]:
    """Rows ``(row, col, value)`` of ``U: (Pi, Pi)`` with path names."""
    return [
        {**base, "row": paths[i], "col": paths[j], "value": float(U[i, j])}
        for i in range(len(paths))
        for j in range(len(paths))
    ]


def _theory_rows(art: Artefact) -> dict[str, list[dict]]:
    base = {"realisation": _realisation(art), "experiment": art.attrs["experiment"]}
    paths = json.loads(art.attrs["paths"])
    rows: dict[str, list[dict]] = {name: [] for name in NAMES}
    for i, N in enumerate(art["widths"]):
        at = {**base, "method": "theory", "N": float(N)}
        rows["accuracy"].append({**at, "network": "all", "accuracy": art["accuracy"][i]})
        rows["order_parameters"] += _entries(art["U/1"][i], paths, at)
        rows["diagnostics"].append(
            {
                **at,
                **{
                    k: float(art[k][i])
                    for k in ("grad_max", "hessian_min", "iterations", "seconds", "ua", "action")
                },
            }
        )
    for net, acc in zip(json.loads(art.attrs["gp_networks"]), art["gp_accuracy"], strict=True):
        rows["accuracy"].append(
            {**base, "method": "gp", "N": np.inf, "network": net, "accuracy": acc}
        )
    rows["order_parameters"] += _entries(
        np.eye(len(paths)), paths, {**base, "method": "gp", "N": np.inf}
    )
    for regime, N in (("fw", float(art.attrs["pc_width"])), ("gp", np.inf)):
        rows["pc_overlaps"] += [
            {**base, "regime": regime, "N": N, "rank": k + 1, "overlap": float(v)}
            for k, v in enumerate(art[f"pc_overlaps/{regime}"])
        ]
    return rows


def _sample_rows(art: Artefact) -> dict[str, list[dict]]:
    at = {
        "realisation": _realisation(art),
        "experiment": art.attrs["experiment"],
        "method": "samples",
        "N": float(art.attrs["width"]),
    }
    U = art["U/1"]
    chains, draws = U.shape[:2]
    sem = U.reshape(chains * draws, *U.shape[2:]).std(axis=0) / np.sqrt(float(art.attrs["ess"]))
    rows = _entries(U.mean(axis=(0, 1)), json.loads(art.attrs["paths"]), at)
    for row, err in zip(rows, sem.ravel(), strict=True):
        row["sem"] = float(err)
    return {
        "accuracy": [{**at, "network": "all", "accuracy": float(art.attrs["accuracy"])}],
        "order_parameters": rows,
        "pc_overlaps": [],
        "diagnostics": [
            {
                **at,
                "chain": c,
                "accept": float(art["accept"][c]),
                "divergences": int(art["divergences"][c]),
                "mean_steps": float(art["mean_steps"][c]),
                "chain_accuracy": float(art["accuracy_per_chain"][c]),
                "rhat": float(art.attrs["rhat"]),
                "ess": float(art.attrs["ess"]),
                "seconds": float(art.attrs["warmup_seconds"])
                + float(art.attrs["sampling_seconds"]),
            }
            for c in range(chains)
        ],
    }


def build(theories: Sequence[Artefact], samples: Sequence[Artefact]) -> dict[str, pd.DataFrame]:
    """The tables ``NAMES`` from theory and samples artefacts."""
    rows: dict[str, list[dict]] = {name: [] for name in NAMES}
    for part in [*map(_theory_rows, theories), *map(_sample_rows, samples)]:
        for name in NAMES:
            rows[name] += part[name]
    return {name: pd.DataFrame(rows[name]) for name in NAMES}
