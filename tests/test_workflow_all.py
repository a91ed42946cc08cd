"""The default target end to end on a tiny config: every table and figure, then a no-op."""

import pandas as pd
import pytest

from tests.workflow_runs import TINY, snakemake, write_config

pytestmark = pytest.mark.slow

TINY_ALL = {
    **TINY,
    "training": {"architectures": ["factored", "vanilla1"], "interpolation_a": [0.0, 1.0],
                 "epochs": 4, "eval_every": 2, "restarts": 1},
    "plm": {"max_iter": 50, "restarts": 1},
    "replica": {"L": 20, "theory_alphas": 20, "sim_alphas": [0.5, 2.0], "realisations": 4,
                "lambdas": [0.01]},
    "sample_complexity": {**TINY["sample_complexity"], "max_iter": 50, "restarts": 1},
    "paths": {"experiments": ["two_paths"], "widths": [10, 1000], "sample_widths": [10],
              "n_train": 20, "n_test": 40, "tokens": 8, "features": 16,
              "sampler": {"warmup": 20, "samples": 20, "chains": 2}},
    "omniglot": {"n_train": 20, "n_validation": 20, "n_test": 40,
                 "network": {"width": 8, "head_dim": 4, "layers": 2, "heads": 2},
                 "training": {"steps": 20, "batch": 8, "log_every": 10},
                 "widths": [10, 1000], "temperatures": [0.1, 1.0], "n_pcs": 5,
                 "sampler": {"warmup": 10, "samples": 10, "chains": 1}},
}


def test_default_target_builds_every_figure(tmp_path):
    config = write_config(tmp_path, TINY_ALL)
    run = snakemake(tmp_path, config, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    figures = tmp_path / "results/figures"
    omniglot = [f"omniglot_fig3{p}" for p in "bcdef"]
    for panel in ("fig2a", "fig2b", "fig2c", "fig2d", "fig3_left", "fig3_right", "paths_fig2e",
                  *omniglot):
        for ext in ("png", "pdf"):
            assert (figures / f"{panel}.{ext}").stat().st_size > 1000
    final = pd.read_csv(tmp_path / "results/tables/training_final.csv")
    assert set(final["arch"]) == {"factored", "vanilla1", "interp-a0", "interp-a1"}
    assert len(final) == 8  # 4 architectures x 2 realisations
    summary = pd.read_csv(tmp_path / "results/tables/sample_complexity_summary.csv")
    assert set(summary["M"]) == {2, 10, 50} and set(summary["n"]) == {2}
    pruning = pd.read_csv(tmp_path / "results/omniglot/tables/cumulative_pruning.csv")
    assert set(pruning["order"]) == {"ascending", "descending"}
    assert pruning.groupby("order")["removed"].max().tolist() == [2, 2]  # one head left per layer
    again = snakemake(tmp_path, config, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
