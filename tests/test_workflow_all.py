"""The default target end to end on a tiny config: every table and figure, then a no-op.

The run is the session's shared ``tiny_run`` (``tests/conftest.py``), which the sampling and
fault tests read too.
"""

import pandas as pd
import pytest
import yaml

from tests.workflow_runs import snakemake_in
from workflow_lib.config import load_config
from workflow_lib.registry import studies

pytestmark = pytest.mark.slow


def test_default_target_builds_every_figure(tiny_run):
    figures = tiny_run / "results/figures"
    cfg = load_config(yaml.safe_load((tiny_run / "tiny.yaml").read_text()))
    panels = [panel.name for study in studies() for panel in study.drawn_panels(cfg)]
    assert {"fig2d", "paths_fig2e", "omniglot_fig3f", "protein_contacts"} <= set(panels)
    for panel in panels:
        for ext in ("png", "pdf"):
            assert (figures / f"{panel}.{ext}").stat().st_size > 1000
    final = pd.read_csv(tiny_run / "results/tables/training_final.csv")
    assert set(final["arch"]) == {"factored", "vanilla1", "interp-a0", "interp-a1"}
    assert len(final) == 8  # 4 architectures x 2 realisations
    assert final["floor_loss"].notna().all()  # each realisation's factored_from_truth fit
    summary = pd.read_csv(tiny_run / "results/tables/sample_complexity_summary.csv")
    assert set(summary["M"]) == {2, 10, 50} and set(summary["n"]) == {2}
    pruning = pd.read_csv(tiny_run / "results/omniglot/tables/cumulative_pruning.csv")
    assert set(pruning["order"]) == {"ascending", "descending", "random"}
    assert pruning.groupby("order")["removed"].max().tolist() == [2, 2, 2]  # a head left per layer
    logged = ("potts/r0/samples", "train/factored/r1", "figures/fig2a", "tables/data")
    for stage in logged:
        assert (tiny_run / f"results/logs/{stage}.log").exists()
        assert (tiny_run / f"results/benchmarks/{stage}.tsv").exists()
    again = snakemake_in(tiny_run, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
