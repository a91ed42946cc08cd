"""Contact scores (plmDCA Frobenius norm, APC), pair ranking, precision, and the study's figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workflow_lib.proteins import contacts
from workflow_lib.studies.proteins import figures, tables

Q = 21


def _random_couplings(L: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(L, L, Q, Q))


def test_apc_by_hand():
    F = np.array([[0.0, 1, 2, 3],
                  [1, 0, 4, 5],
                  [2, 4, 0, 6],
                  [3, 5, 6, 0]])
    # Off-diagonal row means: F_0. = 6/3 = 2, F_1. = 10/3, F_2. = 12/3 = 4, F_3. = 14/3;
    # F_.. = 2 (1+2+3+4+5+6) / 12 = 3.5; APC_ij = F_i. F_.j / 3.5:
    # (0,1): 1 - 2 (10/3) / 3.5 = 1 - 40/21 = -19/21   (0,2): 2 - 8/3.5 = 2 - 16/7 = -2/7
    # (0,3): 3 - 2 (14/3) / 3.5 = 3 - 8/3 = 1/3        (1,2): 4 - (40/3) / 3.5 = 4 - 80/21 = 4/21
    # (1,3): 5 - (140/9) / 3.5 = 5 - 40/9 = 5/9        (2,3): 6 - (56/3) / 3.5 = 6 - 16/3 = 2/3
    upper = {(0, 1): -19 / 21, (0, 2): -2 / 7, (0, 3): 1 / 3,
             (1, 2): 4 / 21, (1, 3): 5 / 9, (2, 3): 2 / 3}
    expected = np.zeros((4, 4))
    for (i, j), v in upper.items():
        expected[i, j] = expected[j, i] = v
    np.testing.assert_allclose(contacts.apc(F), expected, atol=1e-12)
    # the diagonal is ignored
    np.testing.assert_allclose(contacts.apc(F + 7 * np.eye(4)), expected, atol=1e-12)


def test_zero_sum_gauge_sums_and_idempotence():
    J = _random_couplings(4, 0)
    Jg = contacts.zero_sum_gauge(J)
    np.testing.assert_allclose(Jg.sum(axis=2), 0.0, atol=1e-12)
    np.testing.assert_allclose(Jg.sum(axis=3), 0.0, atol=1e-12)
    np.testing.assert_allclose(contacts.zero_sum_gauge(Jg), Jg, atol=1e-12)


def test_frobenius_gauge_invariant_and_symmetrised():
    L = 5
    rng = np.random.default_rng(1)
    J = _random_couplings(L, 2)
    u, v = rng.normal(size=(2, L, L, Q))
    J_shifted = J + 10 * u[:, :, :, None] + 10 * v[:, :, None, :]
    for exclude_gap in (True, False):
        F = contacts.frobenius_scores(J, exclude_gap=exclude_gap)
        np.testing.assert_allclose(contacts.frobenius_scores(J_shifted, exclude_gap=exclude_gap),
                                   F, rtol=1e-10)
        np.testing.assert_allclose(F, F.T)
        assert np.all(np.diag(F) == 0)
    # the score of J equals that of its symmetrised couplings, computed by hand for one pair
    Js = 0.5 * (J[1, 3] + J[3, 1].T)
    Jg = Js - Js.mean(0, keepdims=True) - Js.mean(1, keepdims=True) + Js.mean()
    assert contacts.frobenius_scores(J)[1, 3] == pytest.approx(np.linalg.norm(Jg[:20, :20]))
    np.testing.assert_allclose(contacts.contact_scores(J),
                               contacts.apc(contacts.frobenius_scores(J)))


def test_gap_excluded():
    # A coupling between two gaps only: J_ij(a, b) = c [a = b = gap]. In the zero-sum gauge over
    # all 21 states it is c (e_gap - 1/Q)(e_gap - 1/Q)^T: c / Q^2 in each of the 400 amino-acid
    # entries (norm 20 c / Q^2), and c (1 - 1/Q) over all states.
    c, L = 50.0, 3
    J = np.zeros((L, L, Q, Q))
    J[0, 2, 20, 20] = J[2, 0, 20, 20] = c
    F = contacts.frobenius_scores(J, exclude_gap=True)
    assert F[0, 2] == pytest.approx(20 * c / Q**2)
    assert contacts.frobenius_scores(J, exclude_gap=False)[0, 2] == pytest.approx(c * (1 - 1 / Q))
    assert F[0, 1] == F[1, 2] == 0
    # values only in the gap's row, the same for every amino acid: a pure gauge term, score zero
    J = np.zeros((L, L, Q, Q))
    J[0, 2, 20, :] = J[2, 0, :, 20] = 1e3
    np.testing.assert_allclose(contacts.frobenius_scores(J), 0.0, atol=1e-9)
    # amino-acid couplings unchanged by anything in the gap's row and column after the gauge
    J = contacts.zero_sum_gauge(_random_couplings(L, 3))
    K = J.copy()
    K[:, :, 20, :] += 5.0
    K[:, :, :, 20] -= 3.0
    np.testing.assert_allclose(contacts.frobenius_scores(K), contacts.frobenius_scores(J))


def test_attention_scores():
    att = np.array([[1.0, -2, 0.5],
                    [4, 0, -1],
                    [0.5, 3, 2]])
    a = np.abs(att)
    expected = contacts.apc(0.5 * (a + a.T))
    np.testing.assert_allclose(contacts.attention_scores(att), expected)
    np.testing.assert_allclose(contacts.attention_scores(att.T), expected)
    with pytest.raises(ValueError):
        contacts.attention_scores(np.ones((2, 3)))


def test_ranked_pairs_ties_and_separation():
    S = np.zeros((4, 4))
    S[0, 2] = 2.0
    S[0, 3] = S[1, 2] = 1.0
    S[3, 0] = 100.0  # lower triangle: not read
    i, j, s = contacts.ranked_pairs(S, min_separation=1)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [
        (0, 2), (0, 3), (1, 2), (0, 1), (1, 3), (2, 3)]
    np.testing.assert_array_equal(s, [2, 1, 1, 0, 0, 0])
    i, j, _ = contacts.ranked_pairs(S, min_separation=2)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 2), (0, 3), (1, 3)]


def _six_residues() -> tuple[np.ndarray, np.ndarray]:
    """Scores and distances (Å) of a made-up 6-residue protein, symmetric."""
    scores = {(0, 1): 10, (0, 3): 9, (0, 2): 8, (1, 3): 7, (1, 4): 6, (3, 5): 5, (2, 5): 4,
              (0, 4): 1, (0, 5): 0.5, (1, 5): 0.3, (2, 4): 0.2}
    dist = {(0, 1): 3.8, (0, 3): np.nan, (0, 2): 5.0, (1, 3): 8.0, (1, 4): 6.0, (3, 5): 12.0,
            (2, 5): 7.5, (0, 4): 12.0, (0, 5): 12.0, (1, 5): 12.0, (2, 4): 12.0, (1, 2): 3.8,
            (2, 3): 3.8, (3, 4): 3.8, (4, 5): 3.8}
    S, D = np.zeros((6, 6)), np.zeros((6, 6))
    for (i, j), v in scores.items():
        S[i, j] = S[j, i] = v
    for (i, j), v in dist.items():
        D[i, j] = D[j, i] = v
    return S, D


def test_precision_six_residues():
    S, D = _six_residues()
    # separation >= 2: (0, 1) (score 10) is too close, (0, 3) (score 9) has no distance, (1, 3)
    # is exactly at the threshold (not a contact). Ranked pairs with a distance:
    # (0,2) T, (1,3) F, (1,4) T, (3,5) F, (2,5) T, (0,4) F, (0,5) F, (1,5) F, (2,4) F
    p = contacts.precision_at(S, D, min_separation=2, threshold=8.0, ks=[1, 2, 3, 4, 5, 9, 10])
    expected = {1: 1.0, 2: 0.5, 3: 2 / 3, 4: 0.5, 5: 0.6, 9: 1 / 3}
    for k, v in expected.items():
        assert p[k] == pytest.approx(v)
    assert np.isnan(p[10])  # only 9 pairs have a known distance
    # separation >= 3: (1,4) T, (2,5) T, (0,4) F, (0,5) F, (1,5) F
    p = contacts.precision_at(S, D, min_separation=3, threshold=8.0, ks=[1, 2, 3, 5])
    assert p == pytest.approx({1: 1.0, 2: 1.0, 3: 2 / 3, 5: 0.4})
    # a larger threshold makes (1, 3) a contact
    assert contacts.precision_at(S, D, 2, 8.5, [2])[2] == pytest.approx(1.0)


def test_precision_curve_matches_precision_at():
    rng = np.random.default_rng(4)
    L = 30
    S = rng.normal(size=(L, L))
    D = rng.uniform(3, 20, size=(L, L))
    D = (D + D.T) / 2
    D[rng.random((L, L)) < 0.1] = np.nan
    curve = contacts.precision_curve(S, D, 6, 8.0, 100)
    assert curve.shape == (100,)
    ks = [1, 6, 15, 30, 100]
    p = contacts.precision_at(S, D, 6, 8.0, ks)
    for k in ks:
        assert curve[k - 1] == pytest.approx(p[k])


def test_contact_map():
    _, D = _six_residues()
    C = contacts.contact_map(D, threshold=8.0, min_separation=2)
    assert C.dtype == bool
    np.testing.assert_array_equal(C, C.T)
    assert {(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(C)), strict=True)} == {
        (0, 2), (1, 4), (2, 5)}


def test_precision_ks():
    assert contacts.precision_ks(100) == {"L/5": 20, "L/2": 50, "L": 100}
    assert contacts.precision_ks(3) == {"L/5": 1, "L/2": 1, "L": 3}


def test_figures_draw(tmp_path):
    rows = []
    for family, L in (("PF00001", 20), ("PF00002", 12)):
        for model in ("plmDCA", "factored attention"):
            for realisation in range(2 if model == "plmDCA" else 1):
                for rank in range(1, L + 1):
                    rows.append(dict(family=family, model=model, realisation=realisation,
                                     rank=rank, precision=1.0 / (1 + 0.1 * rank + realisation),
                                     L=L))
    fig = figures.precision_vs_rank(pd.DataFrame(rows))
    fig.savefig(tmp_path / "precision.png", dpi=80)
    assert (tmp_path / "precision.png").stat().st_size > 0

    rng = np.random.default_rng(5)
    tables = []
    for family, L, known in (("PF00001", 20, True), ("PF00002", 12, True), ("MINE", 15, False)):
        i, j = np.triu_indices(L, k=3)
        distance = rng.uniform(3, 20, len(i)) if known else np.full(len(i), np.nan)
        contact = distance < 8  # False where unknown
        for model in ("plmDCA", "factored attention"):
            score = rng.normal(size=len(i)) + 2 * contact
            order = np.argsort(-score, kind="stable")
            tables.append(pd.DataFrame({
                "family": family, "model": model, "i": i[order] + 1, "j": j[order] + 1,
                "score": score[order], "rank": np.arange(1, len(i) + 1),
                "distance": distance[order], "contact": contact[order], "L": L}))
    pairs = pd.concat(tables, ignore_index=True)
    fig = figures.contact_maps(pairs)
    fig.savefig(tmp_path / "maps.png", dpi=80)
    assert (tmp_path / "maps.png").stat().st_size > 0
    # a table read back from CSV: the family without distances has empty cells
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    figures.contact_maps(pd.read_csv(tmp_path / "pairs.csv")).savefig(tmp_path / "maps2.png")
    empty = pd.DataFrame(columns=["family", "model", "realisation", "L", "rank", "precision"])
    figures.precision_vs_rank(empty).savefig(tmp_path / "none.png", dpi=80)


def test_precision_panels_wrap_four_families_to_a_row():
    curves = pd.DataFrame([
        dict(family=f"PF{f:05d}", model="plmdca", realisation=0, rank=rank, precision=0.5, L=10,
             **{"P@k_random": 0.3}) for f in range(7) for rank in range(1, 21)])
    fig = figures.precision_vs_rank(curves)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(fig.axes) == 8 and len(shown) == 7  # two rows of four, the last place empty
    assert [ax.get_title().split(" ")[0] for ax in shown] == list(dict.fromkeys(curves["family"]))
    assert [bool(ax.get_ylabel()) for ax in shown] == ([True, False, False, False] * 2)[:7]


def test_separation_counts_alignment_columns_when_columns_were_dropped():
    """After a gap filter keeps columns 1, 2, 3, 10, 11, rows 2 and 3 (columns 3 and 10) are 7
    columns apart: a pair at separation 6, although adjacent in the filtered matrix."""
    scores = np.zeros((5, 5))
    scores[2, 3] = scores[3, 2] = 1.0
    columns = np.array([1, 2, 3, 10, 11])
    i, j, _ = contacts.ranked_pairs(scores, 6, columns)
    assert (int(i[0]), int(j[0])) == (2, 3)
    assert len(i) == 6  # each of columns 1-3 with each of 10-11
    assert len(contacts.ranked_pairs(scores, 6)[0]) == 0  # without columns: 5 rows, none 6 apart
    distances = np.full((5, 5), 20.0)
    distances[2, 3] = distances[3, 2] = 5.0
    assert contacts.precision_at(scores, distances, 6, 8.0, [1], columns) == {1: 1.0}
    assert contacts.contact_map(distances, 8.0, 6, columns)[2, 3]


def test_random_precision_is_the_mean_precision_of_random_rankings():
    """The yardstick beside every precision: over random score matrices, P@k averages to the
    fraction of contacts among the ranked pairs at every k (pairs too close or without a distance
    are left out of both)."""
    rng = np.random.default_rng(11)
    L, columns, cfg = 30, np.arange(1, 31), {"threshold": 8.0, "min_separation": 6}
    distances = rng.uniform(2, 16, (L, L))
    distances = np.minimum(distances, distances.T)
    distances[3, 20] = distances[20, 3] = np.nan
    baseline = tables.random_precision(distances, columns, cfg)
    i, j = np.triu_indices(L, 6)
    far = distances[i, j]
    assert baseline == pytest.approx(np.mean(far[~np.isnan(far)] < 8.0))
    ks = [6, 15, 30]
    draws = [contacts.precision_at(rng.normal(size=(L, L)), distances, 6, 8.0, ks, columns)
             for _ in range(4000)]
    for k in ks:
        assert np.mean([d[k] for d in draws]) == pytest.approx(baseline, abs=0.01)
    assert 0.2 < baseline < 0.8  # a non-trivial family: the test could fail


def test_family_models_average_the_splits_first():
    models = pd.DataFrame({
        "family": ["A"] * 4 + ["B"] * 2, "model": ["m", "m", "n", "n", "m", "n"],
        "realisation": [0, 1, 0, 1, 0, 0], "L": 10, "heldout_loss": [1.0, 3.0, 2.0, 2.0, 5, 6],
        "P@L": [0.5, 0.7, 0.1, 0.3, 0.9, 1.0], "P@k_random": [0.4] * 4 + [0.3] * 2,
        "contacts": "d < 8 Å, j - i >= 6"})
    out = tables.family_models(models)
    assert list(zip(out["family"], out["model"], out["splits"], strict=True)) == [
        ("A", "m", 2), ("A", "n", 2), ("B", "m", 1), ("B", "n", 1)]
    np.testing.assert_allclose(out["heldout_loss"], [2.0, 2.0, 5.0, 6.0])
    np.testing.assert_allclose(out["P@L"], [0.6, 0.2, 0.9, 1.0])
    np.testing.assert_allclose(out["P@k_random"], [0.4, 0.4, 0.3, 0.3])
    # each precision beside the family's random-ranking precision on the results page
    assert list(out.columns) == ["family", "model", "splits", "L", "P@L", "P@k_random",
                                 "heldout_loss", "contacts"]
