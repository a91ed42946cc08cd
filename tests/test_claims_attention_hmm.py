"""The attention-paths (hidden-Markov-chain) claims on made-up tables: a clean run where every
claim and check holds, doctored tables that turn each verdict, failed solver and sampler checks
that leave the rows they gate not resolved, samples at two widths, and an under-powered run
(n = 2) that resolves nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workflow_lib.claims import statistics as c
from workflow_lib.studies.attention_hmm import claims as hmm
from workflow_lib.studies.attention_hmm.claims import distance_from_identity, hmm_claims

PATHS = ("g", "a1", "d", "a2")
SMALL, MID, LARGE = 10.0, 30.0, 1000.0
# a per-realisation jitter with a spread and mean zero, so that every contrast has an s.e.m.
JITTER = np.array([-0.002, 0.001, 0.0, 0.002, -0.001, 0.0005])


def _U(gd: float, adversarial: float, scale: float) -> np.ndarray:
    """A 4-path U (order ``PATHS``): ``scale`` on the good and denoising diagonal, the
    adversarial diagonal, ``gd`` the good-denoising cross weight."""
    U = np.diag([scale, adversarial, 0.6 * scale, adversarial])
    U[0, 2] = U[2, 0] = gd
    return U


def tables(n: int = 6, theory_small: float = 0.96, theory_large: float = 0.86,
           gp: float = 0.85, gp_good: float = 0.93, gp_good_denoising: float = 0.95,
           samples_gap: dict[float, float] | None = None, gd: float = -4.0,
           adversarial: float = 0.5, good_scale: float = 12.0, large_scale: float = 1.1,
           fw_overlap: float = 0.7, gp_overlap: float = 0.42, grad_max: float = 1e-9,
           sample_widths: tuple[float, ...] = (SMALL,), rhat: dict[float, float] | None = None,
           jitter: np.ndarray = JITTER) -> dict[str, pd.DataFrame]:
    """The study's tables of an ``n``-realisation four-path run with the given means; the theory
    at ``SMALL``, ``LARGE`` and every sampled width (accuracy ``theory_small`` there),
    ``samples_gap`` and ``rhat`` per sampled width (default 0 and 1.01)."""
    acc, ops, pcs, diag = [], [], [], []
    widths = sorted({SMALL, LARGE, *sample_widths})
    for k in range(n):
        j = float(jitter[k % len(jitter)])
        base = {"realisation": k, "experiment": "four_paths"}
        theory = [("theory", N, "all", (theory_large - j if N == LARGE else theory_small + j))
                  for N in widths]
        gps = [("gp", np.inf, net, a + j / 2)
               for net, a in (("all", gp), ("g", gp_good), ("g+d", gp_good_denoising))]
        sampled = [("samples", N, "all", theory_small + 3 * j + (samples_gap or {}).get(N, 0.0))
                   for N in sample_widths]
        acc += [{**base, "method": m, "N": N, "network": net, "accuracy": a}
                for m, N, net, a in theory + gps + sampled]
        for N in widths:
            U = (_U(0.01, 1.0, large_scale + 10 * j) if N == LARGE
                 else _U(gd + 10 * j, adversarial + 10 * j, good_scale + 10 * j))
            ops += [{**base, "method": "theory", "N": N, "row": PATHS[r], "col": PATHS[s],
                     "value": float(U[r, s])} for r in range(4) for s in range(4)]
            diag.append({**base, "method": "theory", "N": N, "grad_max": grad_max,
                         "hessian_min": 0.1})
        for regime, N, top in (("fw", SMALL, fw_overlap + 10 * j), ("gp", np.inf, gp_overlap)):
            pcs += [{**base, "regime": regime, "N": N, "rank": r + 1,
                     "overlap": top / (r + 1)} for r in range(5)]
        diag += [{**base, "method": "samples", "N": N, "chain": ch,
                  "rhat": (rhat or {}).get(N, 1.01)} for N in sample_widths for ch in range(2)]
    return {"accuracy": pd.DataFrame(acc), "order_parameters": pd.DataFrame(ops),
            "pc_overlaps": pd.DataFrame(pcs), "diagnostics": pd.DataFrame(diag)}


def verdicts(t: dict[str, pd.DataFrame]) -> dict[str, str]:
    claims = hmm_claims(t)
    assert set(claims.columns) == set(c.COLUMNS)
    return dict(zip(claims["id"], claims["verdict"], strict=True))


CLAIMS = ("four_paths.theory_above_gp", "four_paths.theory_above_good_path",
          "four_paths.theory_reaches_good_denoising", "four_paths.samples_on_theory_N10",
          "four_paths.good_path_upweighted", "four_paths.denoising",
          "four_paths.adversarial_suppressed", "four_paths.pc_alignment")
CHECKS = ("four_paths.accuracy_falls_with_width", "four_paths.large_width_is_gp",
          "four_paths.gp_limit", "four_paths.theory_minimum",
          "four_paths.samples_converged_N10")
THEORY_ROWS = tuple(i for i in CLAIMS + CHECKS if i != "four_paths.theory_minimum"
                    and "samples_converged" not in i)


def test_clean_run_holds():
    claims = hmm_claims(tables())
    assert list(claims["id"]) == [*CLAIMS, *CHECKS]
    assert set(claims["verdict"]) == {c.HOLDS} and set(claims["gated_by"]) == {""}
    assert list(claims["kind"]) == [c.CLAIM] * len(CLAIMS) + [c.CHECK] * len(CHECKS)
    mine = claims[claims["kind"] == c.CLAIM]
    assert set(mine["unit"]) == {"realisation"} and set(mine["n"]) == {6}
    rows = claims.set_index("id")
    for equivalence in ("four_paths.samples_on_theory_N10", "four_paths.large_width_is_gp"):
        assert rows.loc[equivalence, "test"] == "TOST" and rows.loc[equivalence, "p"] < c.ALPHA
    assert rows.loc["four_paths.samples_on_theory_N10", "gates"] == (
        "four_paths.theory_minimum;four_paths.samples_converged_N10")
    theory_only = [i for i in THEORY_ROWS if "samples" not in i]
    assert (rows.loc[theory_only, "gates"] == "four_paths.theory_minimum").all()


@pytest.mark.parametrize(("change", "claim"), [
    ({"gp": 0.97, "theory_large": 0.955}, "four_paths.theory_above_gp"),
    ({"gp_good": 0.99}, "four_paths.theory_above_good_path"),
    ({"gp_good_denoising": 0.99}, "four_paths.theory_reaches_good_denoising"),
    ({"samples_gap": {SMALL: 0.05}}, "four_paths.samples_on_theory_N10"),
    ({"good_scale": 0.5}, "four_paths.good_path_upweighted"),
    ({"gd": 2.0}, "four_paths.denoising"),
    ({"adversarial": 1.5}, "four_paths.adversarial_suppressed"),
    ({"gp_overlap": 0.8}, "four_paths.pc_alignment"),
    ({"gp": 0.95, "theory_large": 0.965}, "four_paths.accuracy_falls_with_width"),
    ({"theory_large": 0.90}, "four_paths.large_width_is_gp"),
    ({"large_scale": 30.0}, "four_paths.gp_limit"),
])
def test_a_doctored_table_turns_its_verdict(change, claim):
    v = verdicts(tables(**change))
    assert v.pop(claim) == c.FAILS
    assert set(v.values()) == {c.HOLDS}  # and no other row moves


def test_reaching_the_good_denoising_line_is_non_inferiority():
    """The theory a point below the GP of the good and denoising paths reaches it (within the
    margin); three points below it does not."""
    v = verdicts(tables(gp_good_denoising=0.97))
    assert v["four_paths.theory_reaches_good_denoising"] == c.HOLDS
    v = verdicts(tables(gp_good_denoising=0.96 + hmm.ACCURACY_MARGIN.value + 0.01))
    assert v["four_paths.theory_reaches_good_denoising"] == c.FAILS


def test_a_failed_solve_leaves_every_theory_row_not_resolved():
    claims = hmm_claims(tables(grad_max=1e-3)).set_index("id")
    assert claims.loc["four_paths.theory_minimum", "verdict"] == c.FAILS
    gated = claims.loc[list(THEORY_ROWS)]
    assert set(gated["verdict"]) == {c.NOT_RESOLVED}
    assert set(gated["gated_by"]) == {"four_paths.theory_minimum"}
    assert claims.loc["four_paths.samples_converged_N10", "verdict"] == c.HOLDS


def test_samples_at_two_widths_each_with_their_row_and_their_check():
    """Samples at N = 10 and 30: a row and a convergence check per width; chains that did not
    mix at 30 leave that width's row not resolved and the other's verdict as it was; samples
    off the theory at 30 turn only that width's row."""
    v = verdicts(tables(sample_widths=(SMALL, MID)))
    widths = ("N10", "N30")
    assert all(v[f"four_paths.samples_on_theory_{w}"] == c.HOLDS for w in widths)
    assert all(v[f"four_paths.samples_converged_{w}"] == c.HOLDS for w in widths)
    claims = hmm_claims(tables(sample_widths=(SMALL, MID), rhat={MID: 1.5})).set_index("id")
    assert claims.loc["four_paths.samples_converged_N30", "verdict"] == c.FAILS
    assert claims.loc["four_paths.samples_on_theory_N30", "verdict"] == c.NOT_RESOLVED
    assert claims.loc["four_paths.samples_on_theory_N30", "gated_by"] == (
        "four_paths.samples_converged_N30")
    assert claims.loc["four_paths.samples_on_theory_N10", "verdict"] == c.HOLDS
    v = verdicts(tables(sample_widths=(SMALL, MID), samples_gap={MID: 0.05}))
    assert v.pop("four_paths.samples_on_theory_N30") == c.FAILS
    assert set(v.values()) == {c.HOLDS}


def test_under_powered_run_is_not_resolved():
    """Two realisations whose contrasts spread as much as their means: nothing resolves (the
    protocol checks count units and still pass)."""
    v = verdicts(tables(n=2, theory_small=0.90, theory_large=0.89, gp=0.89, gp_good=0.90,
                        gp_good_denoising=0.90 + hmm.ACCURACY_MARGIN.value, gd=-0.05,
                        adversarial=0.95, good_scale=1.0, large_scale=1.3, fw_overlap=0.43,
                        jitter=np.array([-0.01, 0.01])))
    solver = {"four_paths.theory_minimum", "four_paths.samples_converged_N10"}
    assert {k: x for k, x in v.items() if k not in solver} == dict.fromkeys(
        set(CLAIMS + CHECKS) - solver, c.NOT_RESOLVED)
    assert {v[k] for k in solver} == {c.HOLDS}


def test_label_share_is_the_sum_of_squared_overlaps():
    """The PC statistic sums the squared overlaps of every PC the table holds: one large
    overlap among small ones and many moderate ones are told apart by the labels' share, not by
    the largest overlap."""
    pcs = pd.DataFrame({"regime": ["fw"] * 3 + ["gp"] * 3, "realisation": 0,
                        "rank": [1, 2, 3] * 2, "overlap": [0.1, 0.9, 0.1, 0.5, 0.5, 0.5]})
    share = hmm.label_share(pcs)
    assert share[("fw", 0)] == pytest.approx(0.83) and share[("gp", 0)] == pytest.approx(0.75)


def test_every_threshold_is_a_criterion_with_its_reason():
    names = [k.name for k in c.criteria(hmm)]
    assert names == ["ACCURACY_MARGIN", "GP_WEIGHT", "GRAD_MAX", "RHAT"]
    assert all(k.protects and k.source for k in c.criteria(hmm))


def test_distance_from_identity():
    t = tables(n=1)["order_parameters"]
    small = t[t["N"] == SMALL]
    U = _U(-4.0 + 10 * JITTER[0], 0.5 + 10 * JITTER[0], 12.0 + 10 * JITTER[0])
    assert distance_from_identity(small).iloc[0] == pytest.approx(
        np.linalg.norm(U - np.eye(4)) / 2)
