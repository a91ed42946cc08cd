"""Aggregation tables and figure panels on synthetic data."""

import numpy as np
import pandas as pd
import pytest

from workflow_lib.mlm import lbfgs
from workflow_lib.studies.potts_paper import figures, tables


def test_summarise_mean_sem_n():
    df = pd.DataFrame({"g": ["a", "a", "a", "b"], "x": [1.0, 2.0, 4.0, 5.0]})
    out = tables.summarise(df, ["g"], ["x"]).set_index("g")
    assert out.loc["a", "mean"] == pytest.approx(7 / 3)
    assert out.loc["a", "sem"] == pytest.approx(np.std([1, 2, 4], ddof=1) / np.sqrt(3))
    assert out.loc["a", "n"] == 3 and out.loc["b", "n"] == 1 and np.isnan(out.loc["b", "sem"])


def test_warnings_overlap_and_convergence():
    final = pd.DataFrame({"arch": ["factored", "vanilla1"], "model": ["factored", "transformer"],
                          "realisation": [0, 0],
                          "test_overlap": [0.97, 0.97], "converged": [True, False],
                          "rel_improvement": [1e-5, 0.02], "grad_norm": [1e-6, 4e-3]})
    plm = pd.DataFrame({"kind": ["full"], "realisation": [0], "converged": [False],
                        "grad_norm": [3e-3], "grad_tol": [1e-5],
                        "stop_reason": [lbfgs.STOPS[lbfgs.NO_DECREASE]]})
    curve = pd.DataFrame({"realisation": [1, 1], "M": [5, 10], "converged": [False, True]})
    lines = tables.warnings(final, plm, curve)
    assert lines[0].startswith("realisation 0: 97 % of the test sequences occur in the training")
    assert lines[1] == ("train vanilla1 r0: NOT CONVERGED (relative improvement 2.0e-02, "
                        "max |gradient| 4.0e-03)")
    assert "plm full r0: NOT CONVERGED" in lines[2] and "LINE SEARCH" in lines[2]
    assert lines[3] == "sample complexity r1: NOT CONVERGED at M = [5]"
    assert len(lines) == 4
    floor = pd.DataFrame({"kind": ["factored_from_truth"], "realisation": [0], "test_loss": [1.0]})
    final["test_loss"], plm["test_loss"] = [1.02, 1.5], [1.005]
    lines = tables.warnings(tables.with_floor(final, floor), plm.assign(kind="factored")
                               .pipe(tables.with_floor, floor), curve)  # fmt: skip
    assert lines[-2] == ("train factored r0: test loss 2.0 % above the data set's floor "
                         "(plm factored_from_truth)")  # vanilla1 is not judged by the floor
    assert not any("floor" in line for line in lines[:-2])  # plm: 0.5 % is within tolerance
    final["test_overlap"] = 0.3
    final["converged"] = True
    plm["converged"] = True
    curve["converged"] = True
    assert tables.warnings(final, plm, curve) == []


def synthetic_history() -> pd.DataFrame:
    rows = []
    for arch in ("factored", "vanilla1", "vanilla3"):
        for r in (0, 1):
            for e in range(1, 6):
                rows.append({"arch": arch, "model": arch, "a": np.nan, "realisation": r,
                             "epoch": e, "train_loss": 1 / e, "test_loss": 1 / e + 0.3,
                             "recon_error": 1 / e, "pearson_r": 1 - 1 / e, "optimal_loss": 0.3})
    return pd.DataFrame(rows)


def test_the_interpolation_at_a0_is_the_factored_fit():
    """Fig. 2d's a = 0 is factored attention's fit (eq. 2 at a = 0); an interpolated run at
    a = 0, as runs before that rule trained, is not read."""
    final = pd.DataFrame({"arch": ["factored", "vanilla1", "interp-a0", "interp-a0.5"],
                          "model": ["factored", "vanilla1", "interpolated", "interpolated"],
                          "a": [np.nan, np.nan, 0.0, 0.5], "adam_test_loss": [1.0, 2.0, 3.0, 4.0]})
    curve = tables.interpolation_curve(final)
    assert curve[["arch", "a", "adam_test_loss"]].values.tolist() == [
        ["factored", 0.0, 1.0], ["interp-a0.5", 0.5, 4.0]]
    assert tables.interpolation_curve(final.iloc[:3]).empty  # no level a > 0: no curve


def test_figure_panels_render():
    history = synthetic_history()
    fig = figures.fig2a_test_loss(history)
    assert fig.axes[0].get_ylabel() == "test loss (nats per masked site)"
    assert len(fig.axes[0].lines) == 4  # three architectures + the optimal loss
    floor = pd.DataFrame({"kind": "factored_from_truth", "realisation": [0, 1],
                          "test_loss": [0.4, 0.5]})
    ax = figures.fig2a_test_loss(tables.with_floor(history, floor)).axes[0]
    assert ax.lines[-1].get_ydata()[0] == 0.4  # realisation 0's floor
    assert figures.fig2c_reconstruction(history).axes[0].get_xlabel() == "epoch"
    final = pd.DataFrame({"arch": ["factored", "factored", "interp-a0.5", "interp-a0.5"],
                          "model": ["factored", "factored", "interpolated", "interpolated"],
                          "a": [np.nan, np.nan, 0.5, 0.5], "realisation": [0, 1, 0, 1],
                          "adam_test_loss": [0.3, 0.31, 0.5, 0.52], "optimal_loss": 0.29})
    final["test_loss"] = final["adam_test_loss"]
    ax = figures.fig2d_interpolation(final).axes[0]
    assert ax.get_xlabel() == "perturbation level a"
    ydata = np.asarray(ax.lines[0].get_ydata(), dtype=float)
    np.testing.assert_allclose(ydata, [0.015, 0.22])  # paired differences
    ax = figures.fig2d_interpolation(tables.with_floor(final, floor)).axes[0]
    np.testing.assert_allclose(ax.lines[-1].get_ydata()[0], 0.16)  # mean of 0.11 and 0.21
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"{figures.FLOOR_LABEL}, n = 2" in labels
    J = np.random.default_rng(0).normal(size=(5, 5))
    fig = figures.fig2b_attention_maps(J, {"factored": J, "vanilla1": np.abs(J)})
    assert len(fig.axes) == 6  # three maps, each with its colour bar
    loss = {2: 2.0, 10: 1.4, 20: 3.0, 40: 1.5, 80: 0.8}  # separable up to M = 20 (L = 10)
    curve = pd.DataFrame([{"realisation": k, "M": m, "alpha": m / 10, "L": 10.0, "C": 5.0,
                           "test_loss_heldout": loss[m] + k, "optimal_loss_heldout": 0.3,
                           "separable": m <= 20} for k in (0, 1) for m in loss])
    fig = figures.fig3_right_sample_complexity(curve, tables.capacity_edge(curve))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(label.startswith("capacity window: peak ") for label in labels)
    assert "capacity edge (median of 2)" in labels
    assert fig.axes[0].get_ylabel() == "held-out test loss (nats per masked site)"


def test_excess_over_the_data_sets_floor():
    """Each run is compared with its own realisation's factored_from_truth fit; no fit, NaN."""
    plm = pd.DataFrame({"kind": ["factored_from_truth", "full", "factored_from_truth"],
                        "realisation": [0, 0, 1], "test_loss": [0.2, 0.3, 0.4]})
    final = pd.DataFrame({"realisation": [0, 1, 2], "test_loss": [0.21, 0.4, 0.5]})
    out = tables.with_floor(final, plm)
    np.testing.assert_allclose(out["floor_loss"], [0.2, 0.4, np.nan])
    np.testing.assert_allclose(out["excess_over_floor"], [0.05, 0.0, np.nan], atol=1e-12)
    assert tables.with_floor(final, plm.iloc[:0])["floor_loss"].isna().all()


def test_restarts_at_the_floor_are_counted_per_run():
    """A restart counts when its test loss ends within FLOOR_TOLERANCE of its realisation's
    floor; without a floor fit the count is NaN, not 0."""
    plm = pd.DataFrame({"kind": "factored_from_truth", "realisation": [0], "test_loss": [1.0]})
    losses = [1.0, 1.005, 1.02, 0.99, 1.0, 1.5]
    restarts = pd.DataFrame({"arch": "factored", "realisation": [0, 0, 0, 0, 1, 1],
                             "test_loss": losses})
    out = tables.restarts_at_floor(tables.with_floor(restarts, plm))
    assert out["restarts"].tolist() == [4, 2]
    assert out["restarts_at_floor"].iloc[0] == 3 and np.isnan(out["restarts_at_floor"].iloc[1])
