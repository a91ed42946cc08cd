"""Claims tables: each kind of pre-registered test gives the verdict its data show, a doctored
table turns it, an under-powered one is not resolved; the Potts paper's rows on made-up tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from workflow_lib import claims as c
from workflow_lib.studies.potts_paper.claims import potts_claims
from workflow_lib.studies.potts_paper.tables import separability_threshold


def test_signed_rank_p_is_exact():
    assert c.signed_rank_p([1.0, 2.0, 3.0]) == 1 / 8  # all signs positive: 1 of 2^3
    assert c.signed_rank_p([1.0, 2.0, 3.0, 4.0, 5.0]) == 1 / 32
    x = np.random.default_rng(1).normal(0.4, 1.0, 12)
    assert c.signed_rank_p(x) == pytest.approx(
        stats.wilcoxon(x, alternative="greater", method="exact").pvalue)
    assert c.signed_rank_p([1.0, 1.0, -1.0]) == pytest.approx(4 / 8)  # ties: half-ranks


def test_one_sided_t_turns_with_the_data_and_small_n_is_not_resolved():
    assert c.greater([11.0, 12.5, 11.3]).verdict == c.HOLDS  # n = 3: the t decides
    assert c.greater([-11.0, -12.5, -11.3]).verdict == c.FAILS
    assert c.greater([0.1, -0.2, 0.3]).verdict == c.NOT_RESOLVED
    assert c.greater([5.0]).verdict == c.NOT_RESOLVED  # one unit
    assert c.less([0.001, 0.002, 0.0015], 0.01).verdict == c.HOLDS
    # from five units on, one large outlier carries the t but not the exact signed-rank p
    outlier = [50.0, -0.1, -0.2, 0.1, -0.3, 0.2]
    t = c.greater(outlier)
    assert t.p > c.ALPHA and t.verdict == c.NOT_RESOLVED
    skewed = [30.0, 29.0, 31.0, 28.0, -0.5]
    t = c.greater(skewed)
    assert t.p < c.ALPHA and t.p_exact > c.ALPHA and t.verdict == c.NOT_RESOLVED


def test_equivalence_needs_both_sides_and_fails_outside():
    assert c.equivalent([0.001, -0.002, 0.0005, 0.001], 0.01).verdict == c.HOLDS
    assert c.equivalent([0.05, 0.051, 0.049, 0.05], 0.01).verdict == c.FAILS
    assert c.equivalent([0.001, 0.012], 0.01).verdict == c.NOT_RESOLVED


def test_correlations_on_the_fisher_scale_never_leave_minus_one_to_one():
    t = c.correlation_above([0.98, 0.99, 0.985], 0.95)
    assert t.verdict == c.HOLDS and -1 < t.value < 1
    assert c.correlation_above([0.90, 0.91, 0.89], 0.95).verdict == c.FAILS
    assert c.correlation_gap([0.99, 0.98, 0.985], [0.5, 0.6, 0.4]).verdict == c.HOLDS


def test_mcnemar_counts_only_discordant_episodes():
    a = np.array([1] * 60 + [1] * 15 + [0] * 3 + [0] * 22, bool)
    b = np.array([1] * 60 + [0] * 15 + [1] * 3 + [0] * 22, bool)
    t = c.paired_binary(a, b)
    assert t.statistic == 15 and t.p == pytest.approx(stats.binom.sf(14, 18, 0.5))
    assert t.verdict == c.HOLDS and c.paired_binary(b, a).verdict == c.FAILS
    assert c.paired_binary(a[:62], b[:62]).verdict == c.NOT_RESOLVED  # two discordant episodes


def test_checks_and_intersection_union():
    assert c.every([True, True, True]).verdict == c.HOLDS
    assert c.every([True, False, True]).verdict == c.FAILS
    up, flat, down = c.greater([1.0, 1.1, 0.9]), c.greater([0.1, -0.2, 0.3]), c.greater(
        [-1.0, -1.1, -0.9])
    assert c.all_of(up, up).verdict == c.HOLDS
    assert c.all_of(up, flat).verdict == c.NOT_RESOLVED and c.all_of(up, flat).p == flat.p
    assert c.all_of(up, down).verdict == c.FAILS


def test_rows_keep_claims_and_checks_apart():
    claim = c.row("x.claim", "s", "Fig. 1", "a claim", "", c.greater([1.0, 1.1]), "> 0",
                  "realisation")
    check = c.row("x.check", "s", "Sec. 1", "a check", "", c.every([True]), "every unit",
                  "realisation", c.CHECK)
    table = c.table([check, claim])
    assert list(table.columns) == list(c.COLUMNS)
    assert list(table["id"]) == ["x.claim", "x.check"]
    with pytest.raises(ValueError, match="kind"):
        c.row("x", "s", "f", "s", "", c.every([True]), "", "unit", "opinion")


def _potts_tables(excess: list[float], n_real: int = 3) -> dict[str, pd.DataFrame]:
    """Aggregated tables of a made-up run (L = 10, C = 5, M = 2000: an expected excess of
    P / (2 M L) = 0.00238 nats per site): factored attention ``excess`` nats above the optimum per
    realisation, the vanilla models worse and slower, a clean replica fit, and a
    sample-complexity curve that peaks at the separability edge M = 20."""
    r = range(n_real)
    final, history = [], []
    for k in r:
        opt = 1.0
        final += [
            {"arch": "factored", "a": np.nan, "realisation": k, "optimal_loss": opt,
             "test_loss": opt + excess[k], "excess_loss": excess[k],
             "excess_over_floor": excess[k] / 2, "pearson_r": 0.99 - 0.001 * k,
             "recon_error": 0.02},
            {"arch": "vanilla3", "a": np.nan, "realisation": k, "optimal_loss": opt,
             "test_loss": 1.2 + 0.01 * k, "excess_loss": 0.2, "excess_over_floor": 0.2,
             "pearson_r": 0.5 + 0.01 * k, "recon_error": 0.7},
            {"arch": "vanilla1", "a": np.nan, "realisation": k, "optimal_loss": opt,
             "test_loss": 1.5 + 0.01 * k, "excess_loss": 0.5, "excess_over_floor": 0.5,
             "pearson_r": 0.3 + 0.01 * k, "recon_error": 0.9},
        ]
        final += [{"arch": f"interp-a{a:g}", "a": a, "realisation": k, "optimal_loss": opt,
                   "test_loss": opt + 0.1 * a, "excess_loss": 0.1 * a + 0.001 * k}
                  for a in (0.0, 0.5, 1.0)]
        history += [{"arch": arch, "realisation": k, "epoch": e,
                     "test_loss": 1.0 + 2.0 * np.exp(-e / tau)}
                     for arch, tau in (("factored", 2 + 0.1 * k), ("vanilla3", 8 + k),
                                       ("vanilla1", 10 + k))
                     for e in range(1, 60)]
    data = pd.DataFrame({"realisation": list(r), "mean_hamming": [0.300, 0.302, 0.298][:n_real],
                         "target_hamming": 0.3, "tolerance": 0.02, "n_train": 2000, "L": 10,
                         "C": 5, "distinct_fraction": 0.99, "test_in_train": 0.0})
    plm = pd.DataFrame({"kind": "factored", "realisation": list(r),
                        "test_loss": [1 + e for e in excess], "recon_error": 0.03})
    plm = pd.concat([plm, plm.assign(kind="factored_from_truth", recon_error=0.015)])
    alphas = np.linspace(0.1, 30, 60)
    eps = np.where(alphas < 1, alphas, 0.5 + 1 / (alphas - 1 + 1e-9))
    replica = pd.concat([
        pd.DataFrame({"lambda": 1e-4, "alpha": alphas, "source": "theory", "eps": eps,
                      "sigma2": 0.5}),
        pd.DataFrame({"lambda": 1e-4, "alpha": alphas[::4], "source": "simulation",
                      "eps": eps[::4], "z": np.tile([0.5, -0.5, 1.0], 5), "n": 30}),
    ])
    loss = {2: 2.0, 10: 1.4, 20: 3.0, 40: 1.5, 80: 0.8, 160: 0.6}
    curve = pd.DataFrame([{"realisation": k, "M": m, "alpha": m / 10,
                           "test_loss": loss[m] + 0.01 * k * (m % 3), "converged": True,
                           "train_accuracy": 1.0 if m <= 20 else 0.9,
                           "first_near_duplicate": np.nan, "pearson_r": 1 - 1 / m - 0.001 * k}
                          for k in r for m in loss])
    return {"data": data, "training_final": pd.DataFrame(final),
            "training_history": pd.DataFrame(history), "plm": plm, "replica": replica,
            "sample_complexity": curve,
            "sample_complexity_threshold": separability_threshold(curve)}


def _verdicts(tables) -> dict[str, str]:
    table = potts_claims(tables)
    assert list(table.columns) == list(c.COLUMNS)
    return dict(zip(table["id"], table["verdict"], strict=True))


POTTS_ROWS = ("fig2a.optimal", "fig2a.floor", "fig2b.copy", "fig2c.reconstruction",
              "fig2b.partial_vanilla1", "fig2b.partial_vanilla3", "fig2a.faster_vanilla1",
              "fig2a.faster_vanilla3", "fig2a.order_3_layers", "fig2a.order_1_layer",
              "fig2d.a0_best", "fig2d.trend", "identity.mlm_plm", "fig3_left.theory",
              "fig3_left.peak", "fig3_left.no_initial_decay", "fig3_left.tail",
              "fig3_right.rise", "fig3_right.location", "fig3_right.threshold",
              "plm.consistency", "data.hamming", "data.distinct", "data.held_out")


def test_potts_claims_hold_on_a_clean_run_and_a_doctored_table_turns_them():
    clean = _verdicts(_potts_tables([0.001, 0.002, 0.0015]))
    assert set(clean) == set(POTTS_ROWS)
    for claim in POTTS_ROWS:
        assert clean[claim] == c.HOLDS, (claim, clean)
    doctored = _potts_tables([0.05, 0.06, 0.055])  # factored attention far above the optimum
    assert _verdicts(doctored)["fig2a.optimal"] == c.FAILS
    doctored["data"]["distinct_fraction"] = [0.99, 0.2, 0.99]  # one glassy data set
    assert _verdicts(doctored)["data.distinct"] == c.FAILS


def test_the_peak_is_tested_where_the_training_data_put_it():
    tables = _potts_tables([0.001, 0.002, 0.0015])
    assert list(tables["sample_complexity_threshold"]["location_M"]) == [20.0] * 3
    curve = tables["sample_complexity"]
    # the fits stop separating after M = 10 (a near-duplicate pair only from M = 40 on): the
    # edge is at M = 10, where the loss is low
    near = curve.assign(first_near_duplicate=40.0,
                        train_accuracy=np.where(curve["M"] <= 10, 1.0, 0.9))
    tables.update(sample_complexity=near,
                  sample_complexity_threshold=separability_threshold(near))
    verdicts = _verdicts(tables)
    assert verdicts["fig3_right.rise"] == c.FAILS and verdicts["fig3_right.location"] == c.FAILS
    # the edge is a near-duplicate pair's in every realisation: nothing to test
    none = curve.assign(first_near_duplicate=20.0)
    tables.update(sample_complexity=none,
                  sample_complexity_threshold=separability_threshold(none))
    assert _verdicts(tables)["fig3_right.rise"] == c.NOT_RESOLVED
    # a curve that only falls (the literal reading's): the rise does not hold
    tables = _potts_tables([0.001, 0.002, 0.0015])
    falling = tables["sample_complexity"].assign(
        test_loss=lambda d: 2.0 / d["M"] + 0.01 * d["realisation"])
    tables["sample_complexity"] = falling
    assert _verdicts(tables)["fig3_right.rise"] == c.FAILS


def test_under_powered_run_is_not_resolved():
    thin = _verdicts(_potts_tables([0.001, 0.02], n_real=2))  # n = 2, spread across the bound
    assert thin["fig2a.optimal"] == c.NOT_RESOLVED
    tables = _potts_tables([0.001, 0.002, 0.0015])
    curve = tables["sample_complexity"]
    noisy = curve.copy()
    noisy.loc[noisy["M"] == 20, "test_loss"] = [1.9, 4.0, 2.2]  # rises of -0.1, 2.0, 0.2
    tables["sample_complexity"] = noisy
    assert _verdicts(tables)["fig3_right.rise"] == c.NOT_RESOLVED
