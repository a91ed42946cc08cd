"""Stage of every study's figure rules: one panel, PNG and PDF, drawn by the draw function its
registry entry names (``workflow_lib.core.registry.Panel``)."""

from __future__ import annotations

import pandas as pd

from workflow_lib.core.plotting import save_figure
from workflow_lib.core.registry import Job, resolve
from workflow_lib.core.studies import panel


def figure(job: Job) -> None:
    """Draw one panel, PNG and PDF, with the draw function its registry entry names.

    The panel is ``params['panel']``; its draw function gets the panel's tables (the inputs named
    in the panel's ``tables``, read as DataFrames, in that order) and the job's other inputs by
    name (e.g. Fig. 2b's ``models``: paths); the figure goes to ``output['png']`` and
    ``output['pdf']``."""
    entry = panel(job.params["panel"])
    tables = [pd.read_csv(job.input[name]) for name in entry.tables]
    files = {name: paths for name, paths in job.input.items() if name not in entry.tables}
    save_figure(resolve(entry.draw)(*tables, **files), job.output)
