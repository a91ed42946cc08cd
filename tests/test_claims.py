"""Claims tables: verdicts follow from the statistics (95 % t-intervals), a doctored table turns a
verdict, an under-powered one is not resolved."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workflow_lib import claims as c
from workflow_lib.studies.potts_paper.claims import potts_claims, rise


def test_t_interval_verdicts():
    tight = c.Measure(0.5, 0.01, 3)  # half width 4.30 * 0.01
    assert c.above(tight, 0.4) == c.HOLDS
    assert c.above(tight, 0.6) == c.FAILS
    assert c.above(tight, 0.48) == c.NOT_RESOLVED
    assert c.below(tight, 0.6) == c.HOLDS and c.below(tight, 0.4) == c.FAILS
    assert c.within(c.Measure(0.001, 0.0001, 5), 0.01) == c.HOLDS
    assert c.within(c.Measure(-0.05, 0.001, 5), 0.01) == c.FAILS
    # one unit, or no error bar: nothing is resolved
    assert c.above(c.Measure(10.0, math.nan, 1), 0.0) == c.NOT_RESOLVED
    assert c.above(c.mean_sem([3.0]), 0.0) == c.NOT_RESOLVED
    # two units: the t quantile is 12.7, so only a large effect is resolved
    assert c.above(c.mean_sem([1.0, 1.02]), 0.0) == c.HOLDS
    assert c.above(c.mean_sem([0.1, 1.2]), 0.0) == c.NOT_RESOLVED


def test_chi2_consistency():
    assert c.consistent(10.0, 10) == c.HOLDS
    assert c.consistent(40.0, 10) == c.FAILS
    assert c.both(c.HOLDS, c.NOT_RESOLVED) == c.NOT_RESOLVED
    assert c.both(c.HOLDS, c.FAILS) == c.FAILS


def _potts_tables(excess: list[float], n_real: int = 3) -> dict[str, pd.DataFrame]:
    """Aggregated tables of a made-up run: factored attention ``excess`` above the optimum per
    realisation, vanilla models worse, a clean replica fit and a sample-complexity curve."""
    r = range(n_real)
    final = []
    for k in r:
        opt = 1.0
        final += [
            {"arch": "factored", "a": np.nan, "realisation": k, "optimal_loss": opt,
             "test_loss": opt * (1 + excess[k]), "excess_loss": excess[k],
             "excess_over_floor": excess[k] / 2, "pearson_r": 0.99, "recon_error": 0.02},
            {"arch": "vanilla3", "a": np.nan, "realisation": k, "optimal_loss": opt,
             "test_loss": 1.2 + 0.01 * k, "excess_loss": 0.2, "excess_over_floor": 0.2,
             "pearson_r": 0.5, "recon_error": 0.7},
            {"arch": "vanilla1", "a": np.nan, "realisation": k, "optimal_loss": opt,
             "test_loss": 1.5 + 0.01 * k, "excess_loss": 0.5, "excess_over_floor": 0.5,
             "pearson_r": 0.3, "recon_error": 0.9},
        ]
        final += [{"arch": f"interp-a{a:g}", "a": a, "realisation": k, "optimal_loss": opt,
                   "test_loss": opt + 0.1 * a, "excess_loss": 0.1 * a + 0.001 * k}
                  for a in (0.0, 0.5, 1.0)]
    data = pd.DataFrame({"realisation": list(r), "mean_hamming": [0.300, 0.302, 0.298][:n_real],
                         "target_hamming": 0.3, "tolerance": 0.02,
                         "distinct_fraction": 0.99, "test_in_train": 0.0})
    plm = pd.DataFrame({"kind": "factored", "realisation": list(r),
                        "test_loss": [1 + e for e in excess]})
    alphas = np.linspace(0.1, 3, 15)
    replica = pd.concat([
        pd.DataFrame({"lambda": 1e-4, "alpha": alphas, "source": "theory",
                      "eps": 1 / (1 + (alphas - 1) ** 2)}),
        pd.DataFrame({"lambda": 1e-4, "alpha": alphas, "source": "simulation",
                      "eps": 1 / (1 + (alphas - 1) ** 2), "z": np.tile([0.5, -0.5, 1.0], 5),
                      "n": 30}),
    ])
    M = [2, 10, 20, 40, 80]
    curve = pd.DataFrame([{"realisation": k, "M": m, "alpha": m / 10,
                           "test_loss": {2: 2.0, 10: 1.0, 20: 1.6, 40: 1.2, 80: 0.5}[m]
                           + 0.01 * k * (m % 3)}
                          for k in r for m in M])
    return {"data": data, "training_final": pd.DataFrame(final), "plm": plm,
            "replica": replica, "sample_complexity": curve}


def _verdicts(tables) -> dict[str, str]:
    table = potts_claims(tables)
    assert list(table.columns) == list(c.COLUMNS)
    return dict(zip(table["id"], table["verdict"], strict=True))


def test_potts_claims_hold_on_a_clean_run_and_a_doctored_table_turns_them():
    clean = _verdicts(_potts_tables([0.001, 0.002, 0.0015]))
    for claim in ("data.hamming", "data.distinct", "data.held_out", "fig2a.optimal",
                  "fig2a.floor", "fig2b.copy", "fig2c.reconstruction", "fig2a.order_3_layers",
                  "fig2a.order_1_layer", "fig2d.a0_best", "fig2d.trend", "identity.mlm_plm",
                  "fig3_left.theory", "fig3_left.peak", "fig3_right.rise",
                  "fig3_right.location"):
        assert clean[claim] == c.HOLDS, (claim, clean)
    doctored = _potts_tables([0.05, 0.06, 0.055])  # factored attention 5 % above the optimum
    assert _verdicts(doctored)["fig2a.optimal"] == c.FAILS
    doctored["data"]["distinct_fraction"] = 0.2  # a glassy data set
    assert _verdicts(doctored)["data.distinct"] == c.FAILS


def test_under_powered_run_is_not_resolved():
    thin = _verdicts(_potts_tables([0.001, 0.009], n_real=2))  # n = 2, spread across the bound
    assert thin["fig2a.optimal"] == c.NOT_RESOLVED


def test_rise_is_paired_from_the_lowest_point_before_the_peak():
    curve = _potts_tables([0.001, 0.002, 0.0015])["sample_complexity"]
    m, low, high = rise(curve)
    assert (low, high) == (10, 20) and m.value == pytest.approx(0.61) and m.n == 3
    assert m.tests == 10  # picked from the 10 pairs of 5 grid points
    falling = curve.assign(test_loss=2.0 / curve["M"] + 0.01 * curve["realisation"])
    assert c.above(rise(falling)[0], 0.0) == c.FAILS


def test_a_curve_that_only_rises_has_no_peak():
    tables = _potts_tables([0.001, 0.002, 0.0015])
    curve = tables["sample_complexity"]
    tables["sample_complexity"] = curve.assign(
        test_loss=curve["M"] / 10 + 0.01 * curve["realisation"])
    verdicts = _verdicts(tables)
    assert verdicts["fig3_right.rise"] == c.HOLDS
    assert verdicts["fig3_right.location"] == c.NOT_RESOLVED  # no fall after the largest rise


def test_threshold_claim_needs_every_realisation_to_cross_it():
    tables = _potts_tables([0.001, 0.002, 0.0015])
    tables["sample_complexity_threshold"] = pd.DataFrame({"threshold_M": [20.0, 20.0, 28.0]})
    assert _verdicts(tables)["fig3_right.threshold"] == c.HOLDS
    tables["sample_complexity_threshold"] = pd.DataFrame({"threshold_M": [20.0, np.nan, 40.0]})
    assert _verdicts(tables)["fig3_right.threshold"] == c.NOT_RESOLVED


def test_exact_values_keep_their_n_and_a_bonferroni_interval_is_wider():
    assert c.exact(1.2).n == 1 and c.above(c.exact(1.2), 1.0) == c.HOLDS
    once, picked = c.Measure(1.0, 0.2, 10), c.Measure(1.0, 0.2, 10, tests=100)
    assert c.above(once, 0.0) == c.HOLDS and c.above(picked, 0.0) == c.NOT_RESOLVED
    negative = c.Measure(-1.0, 0.2, 10, tests=100)  # below() keeps the widening
    assert c.below(c.Measure(-1.0, 0.2, 10), 0.0) == c.HOLDS
    assert c.below(negative, 0.0) == c.NOT_RESOLVED
