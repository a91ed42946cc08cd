"""The attention-paths (hidden-Markov-chain) claims on made-up tables: a clean run where every
claim holds, doctored tables that turn each verdict, and an under-powered run (n = 2) that
resolves nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workflow_lib import claims as c
from workflow_lib.studies.attention_hmm.claims import distance_from_identity, hmm_claims

PATHS = ("g", "a1", "d", "a2")
SMALL, LARGE = 10.0, 1000.0
# a per-realisation jitter with a spread and mean zero, so that every contrast has an s.e.m.
JITTER = np.array([-0.002, 0.001, 0.0, 0.002, -0.001, 0.0005])


def _U(gd: float, adversarial: float, scale: float) -> np.ndarray:
    """A 4-path U (order ``PATHS``): ``scale`` on the good and denoising diagonal, the
    adversarial diagonal, ``gd`` the good-denoising cross weight."""
    U = np.diag([scale, adversarial, 0.6 * scale, adversarial])
    U[0, 2] = U[2, 0] = gd
    return U


def tables(n: int = 6, theory_small: float = 0.96, theory_large: float = 0.86,
           gp: float = 0.85, samples_gap: float = 0.0, gd: float = -4.0,
           adversarial: float = 0.5, large_scale: float = 1.1, fw_overlap: float = 0.85,
           gp_overlap: float = 0.42, grad_max: float = 1e-9,
           jitter: np.ndarray = JITTER) -> dict[str, pd.DataFrame]:
    """The study's tables of an ``n``-realisation four-path run with the given means."""
    acc, ops, pcs, diag = [], [], [], []
    for k in range(n):
        j = float(jitter[k % len(jitter)])
        base = {"realisation": k, "experiment": "four_paths"}
        for method, N, a in (("theory", SMALL, theory_small + j),
                             ("theory", LARGE, theory_large - j),
                             ("gp", np.inf, gp + j / 2),
                             ("samples", SMALL, theory_small + j + samples_gap + 2 * j)):
            acc.append({**base, "method": method, "N": N, "network": "all", "accuracy": a})
        for N, U in ((SMALL, _U(gd + 10 * j, adversarial + 10 * j, 12.0)),
                     (LARGE, _U(0.01, 1.0, large_scale + 10 * j))):
            ops += [{**base, "method": "theory", "N": N, "row": PATHS[r], "col": PATHS[s],
                     "value": float(U[r, s])} for r in range(4) for s in range(4)]
            diag.append({**base, "method": "theory", "N": N, "grad_max": grad_max,
                         "hessian_min": 0.1})
        for regime, N, top in (("fw", SMALL, fw_overlap + 10 * j), ("gp", np.inf, gp_overlap)):
            pcs += [{**base, "regime": regime, "N": N, "rank": r + 1,
                     "overlap": top / (r + 1)} for r in range(5)]
        diag += [{**base, "method": "samples", "N": SMALL, "chain": ch, "rhat": 1.01}
                 for ch in range(2)]
    return {"accuracy": pd.DataFrame(acc), "order_parameters": pd.DataFrame(ops),
            "pc_overlaps": pd.DataFrame(pcs), "diagnostics": pd.DataFrame(diag)}


def verdicts(t: dict[str, pd.DataFrame]) -> dict[str, str]:
    claims = hmm_claims(t)
    assert set(claims.columns) == set(c.COLUMNS)
    return dict(zip(claims["id"], claims["verdict"], strict=True))


CLAIMS = ("four_paths.theory_above_gp", "four_paths.accuracy_falls_with_width",
          "four_paths.samples_on_theory_N10", "four_paths.denoising",
          "four_paths.adversarial_suppressed", "four_paths.gp_limit",
          "four_paths.pc_alignment")
CHECKS = ("theory.minimum", "samples.converged")


def test_clean_run_holds():
    claims = hmm_claims(tables())
    assert list(claims["id"]) == [*CLAIMS, *CHECKS]
    assert set(claims["verdict"]) == {c.HOLDS}
    assert list(claims["kind"]) == [c.CLAIM] * len(CLAIMS) + [c.CHECK] * len(CHECKS)
    mine = claims[claims["kind"] == c.CLAIM]
    assert set(mine["unit"]) == {"realisation"} and set(mine["n"]) == {6}
    row = claims.set_index("id").loc["four_paths.samples_on_theory_N10"]
    assert row["test"] == "TOST" and row["p"] < c.ALPHA


@pytest.mark.parametrize(("change", "claim"), [
    ({"gp": 0.99}, "four_paths.theory_above_gp"),
    ({"theory_large": 0.99}, "four_paths.accuracy_falls_with_width"),
    ({"samples_gap": 0.05}, "four_paths.samples_on_theory_N10"),
    ({"gd": 2.0}, "four_paths.denoising"),
    ({"adversarial": 1.5}, "four_paths.adversarial_suppressed"),
    ({"large_scale": 30.0}, "four_paths.gp_limit"),
    ({"gp_overlap": 0.95}, "four_paths.pc_alignment"),
    ({"grad_max": 1e-3}, "theory.minimum"),
])
def test_a_doctored_table_turns_its_verdict(change, claim):
    v = verdicts(tables(**change))
    assert v.pop(claim) == c.FAILS
    assert set(v.values()) == {c.HOLDS}  # and no other row moves


def test_under_powered_run_is_not_resolved():
    """Two realisations whose contrasts spread as much as their means: nothing resolves (the
    protocol checks count units and still pass)."""
    v = verdicts(tables(n=2, theory_small=0.90, theory_large=0.89, gp=0.89, samples_gap=0.0,
                        gd=-0.05, adversarial=0.95, large_scale=12.0, fw_overlap=0.43,
                        jitter=np.array([-0.01, 0.01])))
    assert {k: x for k, x in v.items() if k not in CHECKS} == dict.fromkeys(CLAIMS,
                                                                          c.NOT_RESOLVED)
    assert v["theory.minimum"] == v["samples.converged"] == c.HOLDS


def test_distance_from_identity():
    t = tables(n=1)["order_parameters"]
    small = t[t["N"] == SMALL]
    U = _U(-4.0 + 10 * JITTER[0], 0.5 + 10 * JITTER[0], 12.0)
    assert distance_from_identity(small).iloc[0] == pytest.approx(
        np.linalg.norm(U - np.eye(4)) / 2)
