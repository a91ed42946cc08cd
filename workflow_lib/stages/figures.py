"""Stages ``aggregate`` (the Potts paper's tables) and ``figure`` (one panel, PNG and PDF)."""

from __future__ import annotations

import logging

import pandas as pd

from workflow_lib.analysis import aggregate as tables
from workflow_lib.analysis import figures
from workflow_lib.analysis.save import save_figure
from workflow_lib.artefacts import write_csv
from workflow_lib.stages import Job

log = logging.getLogger("workflow_lib.stages")

PANELS = {  # panel -> (drawing function, the tables it reads)
    "fig2a": (figures.fig2a_test_loss, ("training_history",)),
    "fig2c": (figures.fig2c_reconstruction, ("training_history",)),
    "fig2d": (figures.fig2d_interpolation, ("training_final",)),
    "fig3_left": (figures.fig3_left_replica, ("replica",)),
    "fig3_right": (figures.fig3_right_sample_complexity,
                   ("sample_complexity", "sample_complexity_peak")),
}


def aggregate(job: Job) -> None:
    """Write the tidy tables of every stage's artefacts (CSV; ``analysis.aggregate``); one warning
    line per unconverged fit or mostly in-sample test set."""
    built = tables.build_tables(**job.input)
    for line in tables.warnings(built["training_final"], built["plm"], built["sample_complexity"]):
        log.warning("%s", line)
    for name, df in built.items():
        write_csv(df, job.output[name])


def figure(job: Job) -> None:
    """Draw panel ``params['panel']`` from the tables (Fig. 2b: from the trained models of
    realisation 0) and save it as PNG and PDF."""
    panel = job.params["panel"]
    if panel == "fig2b":
        fig = figures.fig2b_attention_maps(*tables.attention_maps(job.input["models"]))
    elif panel in PANELS:
        draw, names = PANELS[panel]
        fig = draw(*(pd.read_csv(job.input[name]) for name in names))
    else:
        raise ValueError(f"unknown figure panel {panel!r}")
    save_figure(fig, job.output)
