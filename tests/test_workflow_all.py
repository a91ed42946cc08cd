"""The default target end to end on a tiny config: every table and figure, then a no-op.

The run is the session's shared ``tiny_run`` (``tests/conftest.py``), which the sampling and
fault tests read too.
"""

import pandas as pd
import pytest

from tests.workflow_runs import snakemake_in

pytestmark = pytest.mark.slow


def test_default_target_builds_every_figure(tiny_run):
    figures = tiny_run / "results/figures"
    omniglot = [f"omniglot_fig3{p}" for p in "bcdef"]
    for panel in ("fig2a", "fig2b", "fig2c", "fig2d", "fig3_left", "fig3_right", "paths_fig2e",
                  *omniglot):
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
