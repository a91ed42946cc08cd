"""Stages ``aggregate`` (tables) and ``figure`` (one panel, PNG and PDF)."""

from __future__ import annotations

import logging
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workflow_lib.analysis import aggregate as agg
from workflow_lib.analysis import figures
from workflow_lib.artefacts import read_artefact
from workflow_lib.stages import Job

log = logging.getLogger("workflow_lib.stages")


def write_csv(df: pd.DataFrame, path: str) -> None:
    """Atomic CSV write (temporary name + rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(target)


def aggregate(job: Job) -> None:
    """Write the tidy tables of every stage's artefacts (CSV)."""
    history, final = agg.training_tables(job.input["train"])
    sc = agg.sample_complexity_table(job.input["sample_complexity"])
    plm = agg.plm_table(job.input["plm"])
    for line in agg.warnings(final, plm, sc):
        log.warning("%s", line)
    tables = {
        "training_history": history,
        "training_final": final,
        "training_summary": agg.summarise(
            final, ["arch", "a"], ["test_loss", "test_loss_heldout", "excess_loss", "test_overlap",
                                   "recon_error", "pearson_r", "converged"]),
        "plm": plm,
        "replica": agg.replica_table(job.input["theory"], job.input["simulations"]),
        "sample_complexity": sc,
        "sample_complexity_summary": agg.summarise(
            sc, ["M", "alpha"], ["test_loss", "test_loss_heldout", "train_loss", "converged"]),
        "sample_complexity_peak": agg.peak(sc, "M", "test_loss").to_frame().T.assign(
            alpha=lambda d: d["M"] / sc["M"].iloc[0] * sc["alpha"].iloc[0]),
    }
    for name, df in tables.items():
        write_csv(df, job.output[name])


def _attention_maps(paths: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """J and the attention maps of realisation 0 of the main architectures."""
    maps, J = {}, None
    for path in paths:
        art = read_artefact(path, "mlm-train/1", required=("attention", "J"))
        maps[str(art.attrs["arch"])] = art["attention"]
        J = art["J"]
    order = [a for a in ("vanilla1", "vanilla3", "factored") if a in maps]
    return J, {a: maps[a] for a in order}


def figure(job: Job) -> None:
    """Draw panel ``params['panel']`` from the tables and save it as PNG and PDF."""
    panel = job.params["panel"]
    read = lambda name: pd.read_csv(job.input[name])  # noqa: E731
    if panel == "fig2a":
        fig = figures.fig2a_test_loss(read("training_history"))
    elif panel == "fig2b":
        fig = figures.fig2b_attention_maps(*_attention_maps(job.input["models"]))
    elif panel == "fig2c":
        fig = figures.fig2c_reconstruction(read("training_history"))
    elif panel == "fig2d":
        fig = figures.fig2d_interpolation(read("training_final"))
    elif panel == "fig3_left":
        fig = figures.fig3_left_replica(read("replica"))
    elif panel == "fig3_right":
        fig = figures.fig3_right_sample_complexity(read("sample_complexity"))
    else:
        raise ValueError(f"unknown figure panel {panel!r}")
    save_figure(fig, job.output)


def save_figure(fig: plt.Figure, outputs: dict[str, str]) -> None:
    """Write ``fig`` to ``outputs['png']`` and ``outputs['pdf']`` atomically, then close it."""
    for key in ("png", "pdf"):
        target = Path(outputs[key])
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".tmp-{target.name}")
        fig.savefig(tmp, dpi=150, format=key)
        tmp.replace(target)
    plt.close(fig)
