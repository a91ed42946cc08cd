"""The one-shot Omniglot claims on made-up tables: a clean run where every claim and check
holds, doctored tables that turn each verdict, and an under-powered run (few episodes, paths,
heads and random orders) that resolves nothing; the study's own tests (binomial, Mantel, exact
rank correlation) against their definitions."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from workflow_lib.claims import statistics as c
from workflow_lib.studies.omniglot import claims as omniglot
from workflow_lib.studies.omniglot.claims import (
    binomial_above,
    mantel,
    omniglot_claims,
    rank_correlation_above,
)

SMALL, LARGE, SAMPLED = 10.0, 10000.0, 10.0


def _U(paths: int, rng: np.random.Generator) -> np.ndarray:
    a = rng.normal(size=(paths, paths))
    return a @ a.T / paths + np.eye(paths)


def tables(episodes: int = 2000, paths: int = 16, heads: int = 8, orders: int = 10,
           gd: float = 0.80, theory: float = 0.78, large: float = 0.71, gp: float = 0.70,
           samples_flip: float = 0.01, samples_noise: float = 0.05, gd_sign: float = 1.0,
           fw_overlap: float = 0.6, gp_overlap: float = 0.4, cost_sign: float = 1.0,
           order_gain: float = 0.03, seed: int = 1) -> dict[str, pd.DataFrame]:
    """The study's tables (but the claims) of a made-up run with the given effects: a method of
    accuracy ``a`` gets right the episodes whose shared difficulty is below ``a`` (so the more
    accurate of two methods gets right a superset), the samples flip a share of the theory's."""
    rng = np.random.default_rng(seed)
    difficulty = (np.arange(episodes) + 0.5) / episodes
    right = {name: (difficulty < a).astype(int) for name, a in
             (("theory", theory), ("large", large), ("gp", gp))}
    flip = rng.random(episodes) < samples_flip
    right["samples"] = np.where(flip, 1 - right["theory"], right["theory"])
    ep = pd.concat([pd.DataFrame({"episode": np.arange(episodes), "method": m, "N": N, "T": 0.5,
                                  "correct": right[name]})
                    for m, N, name in (("theory", SMALL, "theory"), ("theory", LARGE, "large"),
                                       ("gp", np.inf, "gp"), ("samples", SAMPLED, "samples"))])
    acc = pd.DataFrame([{"method": "gradient descent", "N": 64.0, "T": np.nan, "selected": True,
                         "validation": gd, "test": gd, "n_test": episodes}])
    U = _U(paths, rng)
    noisy = U + samples_noise * rng.normal(size=U.shape)
    labels = [f"({i // 4 + 1}, {i % 4 + 1})" for i in range(paths)]
    ops = pd.DataFrame([{"source": src, "row": labels[r], "col": labels[s],
                         "value": float(M[r, s])}
                        for src, M in (("theory N=10", U), ("samples N=10", (noisy + noisy.T) / 2),
                                       ("gradient descent", 3.0 * gd_sign * U))
                        for r in range(paths) for s in range(paths)])
    pcs = pd.DataFrame([{"regime": regime, "rank": k + 1, "overlap": top / (k + 1)}
                        for regime, top in (("fw", fw_overlap), ("gp", gp_overlap))
                        for k in range(5)])
    score = np.linspace(0.1, 1.0, heads)
    drop = cost_sign * score / 10 + 0.002 * rng.normal(size=heads)
    scores = pd.DataFrame({"layer": np.arange(heads) // 4 + 1, "head": np.arange(heads) % 4 + 1,
                           "score": score, "accuracy": gd - drop, "drop": drop})
    k = np.arange(heads - 1)
    curves = [("ascending", 0, gd - 0.01 * k), ("descending", 0, gd - 0.04 * k)]
    curves += [("random", r, gd - (0.01 + order_gain / k.max()) * k
                + 0.005 * rng.normal(size=len(k)) * (k > 0)) for r in range(orders)]
    cumulative = pd.DataFrame([{"order": o, "replicate": r, "removed": i, "accuracy": a,
                                "last": ""} for o, r, curve in curves
                               for i, a in enumerate(curve)])
    return {"accuracy": acc, "episodes": ep, "order_parameters": ops, "pc_overlaps": pcs,
            "head_scores": scores, "cumulative_pruning": cumulative}


def verdicts(t: dict[str, pd.DataFrame]) -> dict[str, str]:
    claims = omniglot_claims(t)
    assert set(claims.columns) == set(c.COLUMNS)
    return dict(zip(claims["id"], claims["verdict"], strict=True))


CLAIMS = ("fig3.gradient_descent", "fig3b.theory_above_gp", "fig3b.samples_on_theory",
          "fig3c.samples_pattern", "fig3c.gradient_descent_pattern", "fig3d.pc_alignment",
          "fig3e.score_predicts_cost", "fig3f.score_order_pruning")
CHECKS = ("fig3b.accuracy_falls_with_width", "fig3b.large_width_is_gp")


def test_clean_run_holds():
    claims = omniglot_claims(tables())
    assert list(claims["id"]) == [*CLAIMS, *CHECKS]
    assert list(claims["kind"]) == [c.CLAIM] * len(CLAIMS) + [c.CHECK] * len(CHECKS)
    assert set(claims["verdict"]) == {c.HOLDS}
    rows = claims.set_index("id")
    assert rows.loc["fig3b.large_width_is_gp", "test"] == "TOST paired"
    assert rows.loc["fig3b.theory_above_gp", "test"] == "McNemar exact"
    assert rows.loc["fig3b.theory_above_gp", "unit"] == "episode"
    assert rows.loc["fig3b.samples_on_theory", "test"] == "TOST paired"
    assert rows.loc["fig3c.samples_pattern", "n"] == 16


@pytest.mark.parametrize(("change", "claim"), [
    ({"gd": 0.60}, "fig3.gradient_descent"),
    ({"theory": 0.69, "large": 0.685}, "fig3b.theory_above_gp"),
    ({"theory": 0.705, "large": 0.715}, "fig3b.accuracy_falls_with_width"),
    ({"gp": 0.65}, "fig3b.large_width_is_gp"),
    ({"samples_flip": 0.10}, "fig3b.samples_on_theory"),
    ({"gd_sign": -1.0}, "fig3c.gradient_descent_pattern"),
    ({"fw_overlap": 0.3}, "fig3d.pc_alignment"),
    ({"cost_sign": -1.0}, "fig3e.score_predicts_cost"),
    ({"order_gain": -0.05}, "fig3f.score_order_pruning"),
])
def test_a_doctored_table_turns_its_verdict(change, claim):
    v = verdicts(tables(**change))
    assert v.pop(claim) == c.FAILS
    assert set(v.values()) == {c.HOLDS}  # and no other row moves


def test_doctored_samples_lose_the_theory_pattern():
    v = verdicts(tables(samples_noise=50.0))
    assert v["fig3c.samples_pattern"] != c.HOLDS


def test_under_powered_run_is_not_resolved():
    """Ten episodes, three paths, three heads, two random orders: the tests with a sampling
    unit resolve nothing (the PC comparison is deterministic)."""
    v = verdicts(tables(episodes=10, paths=3, heads=3, orders=2, gd=0.8, theory=0.8,
                        large=0.8, gp=0.7, samples_flip=0.2, order_gain=0.0))
    assert v.pop("fig3d.pc_alignment") == c.HOLDS
    assert v == dict.fromkeys(set(CLAIMS + CHECKS) - {"fig3d.pc_alignment"}, c.NOT_RESOLVED)


def test_pc_alignment_is_the_labels_share_not_the_largest_overlap():
    """A GP kernel whose best PC aligns better than the finite-width kernel's best, but whose
    top PCs hold less of the labels: the finite-width kernel aligns better."""
    t = tables()
    t["pc_overlaps"] = pd.DataFrame({"regime": ["fw"] * 3 + ["gp"] * 3, "rank": [1, 2, 3] * 2,
                                     "overlap": [0.6, 0.6, 0.5, 0.7, 0.1, 0.1]})
    row = omniglot_claims(t).set_index("id").loc["fig3d.pc_alignment"]
    assert row["verdict"] == c.HOLDS
    assert row["measured"] == pytest.approx(0.97 - 0.51)


def test_every_threshold_is_a_criterion_with_its_reason():
    assert [k.name for k in c.criteria(omniglot)] == ["TARGET_ACCURACY", "ACCURACY_MARGIN"]
    assert all(k.protects and k.source for k in c.criteria(omniglot))


def test_binomial_above_is_the_exact_binomial_test():
    t = binomial_above(76, 100, 0.65)
    assert t.p == pytest.approx(stats.binomtest(76, 100, 0.65, alternative="greater").pvalue)
    assert t.verdict == c.HOLDS and t.value == pytest.approx(0.76)
    assert binomial_above(50, 100, 0.65).verdict == c.FAILS
    assert binomial_above(7, 10, 0.65).verdict == c.NOT_RESOLVED


def test_rank_correlation_p_is_exact():
    x, y = np.arange(5.0), np.array([0.0, 2.0, 1.0, 3.0, 4.0])
    rho = stats.spearmanr(x, y).statistic
    null = [stats.spearmanr(x, p).statistic for p in itertools.permutations(y)]
    t = rank_correlation_above(x, y)
    assert t.value == pytest.approx(rho)
    assert t.p == pytest.approx(np.mean(np.array(null) >= rho - 1e-12))
    assert rank_correlation_above(x, x).p == pytest.approx(1 / 120)


def test_rank_correlation_is_scipys_with_ties_and_not_resolved_without_finite_values():
    x, y = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 5.0]), np.array([0.5, 0.1, 0.7, 0.7, 0.9, 2.0])
    assert rank_correlation_above(x, y).value == pytest.approx(stats.spearmanr(x, y).statistic,
                                                               abs=1e-15)
    broken = rank_correlation_above(np.array([1.0, np.nan, 3.0, 2.0]), np.arange(4.0))
    assert broken.verdict == c.NOT_RESOLVED and np.isnan(broken.value)


def test_mantel_relabelling_keeps_the_diagonal():
    """A matrix against a relabelled copy of itself: r = 1 only for the identity relabelling;
    against an unrelated matrix the p is not small."""
    rng = np.random.default_rng(3)
    U = _U(8, rng)
    assert mantel(U, U).verdict == c.HOLDS and mantel(U, U).value == pytest.approx(1.0)
    assert mantel(U, _U(8, rng)).verdict != c.HOLDS


def test_paired_equivalent_is_tost_on_the_differences():
    rng = np.random.default_rng(5)
    a, b = rng.random(40) < 0.7, rng.random(40) < 0.7
    mine, reference = c.paired_equivalent(a, b, 0.3), c.equivalent(a.astype(float) - b, 0.3)
    assert mine.p == pytest.approx(reference.p) and mine.value == pytest.approx(reference.value)
    assert mine.verdict == reference.verdict
    d = a.astype(float) - b
    sem = d.std(ddof=1) / np.sqrt(len(d))
    t_low, t_high = (d.mean() + 0.3) / sem, (d.mean() - 0.3) / sem
    assert mine.p == max(stats.t.sf(t_low, 39), stats.t.cdf(t_high, 39))  # scipy's t, exactly
    assert c.paired_equivalent(a, a, 0.02).verdict == c.HOLDS  # identical on every episode
