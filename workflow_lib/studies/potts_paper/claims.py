"""The Potts paper's claims (Rende et al. 2024, Figs. 2-3), measured on the study's tables.

Each claim is a row of ``workflow_lib.claims``: values are means over realisations (paired
per realisation where two models are compared) with their standard error; the verdict follows
from the 95 % t-interval, so two realisations rarely resolve anything. The tolerances are the
module constants, stated in each row's criterion.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from workflow_lib import claims as c

STUDY = "potts_paper"
DISTINCT = 0.95  # a training set "of distinct sequences": at least this fraction distinct
HELD_OUT = 0.05  # a test set "held out": at most this fraction also in the training set
OPTIMUM = 0.01  # "reaches the optimal loss": test loss at most 1 % above the optimum
FLOOR = 0.01  # "reaches the data set's floor": at most 1 % above the truth-started PLM fit
COPY = 0.95  # "A is a copy of J": Pearson r above this
RECONSTRUCTED = 0.1  # "reconstruction error -> 0": normalised error below this
IDENTITY = 0.01  # MLM factored attention = factored pseudo-likelihood: relative gap below this
PEAK_ALPHA = (0.8, 1.25)  # "the peak of Fig. 3 left is at alpha = 1": grid points in this range


def _by_realisation(final: pd.DataFrame, arch: str, column: str) -> pd.Series:
    rows = final[final["arch"] == arch]
    return rows.set_index("realisation")[column]


def _paired_values(diff: pd.Series) -> tuple[float, float, int]:
    m = c.mean_sem(diff)
    return m.value, m.error, m.n


def _paired(a: pd.Series, b: pd.Series) -> c.Measure:
    """Mean and s.e.m. of ``a - b`` over the realisations both have."""
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    return c.mean_sem(both.iloc[:, 0] - both.iloc[:, 1])


def data_claims(data: pd.DataFrame) -> list[dict]:
    """The data protocol: the achieved mean Hamming distance, distinct training sequences and a
    held-out test set."""
    if not len(data):
        return []
    rows = []
    target, tol = data["target_hamming"].iloc[0], data["tolerance"].iloc[0]
    if np.isfinite(target):
        m = c.mean_sem(data["mean_hamming"] - target)
        rows.append(c.row(
            "data.hamming", STUDY, "Sec. 4", "Sequences are sampled at the protocol's mean "
            f"normalised Hamming distance (this run: {target:g}), typical of protein families",
            "0.3", m, f"achieved - target within +-{tol:g} (beta_tuning.tolerance)",
            c.within(m, tol)))
    m = c.mean_sem(data["distinct_fraction"])
    rows.append(c.row(
        "data.distinct", STUDY, "Sec. 4", "The training set is a family of distinct sequences, "
        "as a protein family is", "", m, f"fraction of distinct training sequences > {DISTINCT}",
        c.above(m, DISTINCT)))
    m = c.mean_sem(data["test_in_train"])
    rows.append(c.row(
        "data.held_out", STUDY, "Fig. 2a", "Test losses are measured on held-out sequences", "",
        m, f"fraction of test sequences also in the training set < {HELD_OUT}",
        c.below(m, HELD_OUT)))
    return rows


def training_claims(final: pd.DataFrame) -> list[dict]:
    """Fig. 2a-c: factored attention at the optimum and at the data set's floor, the ordering of
    the architectures, A against J."""
    rows = []
    fac = final[final["arch"] == "factored"]
    if len(fac):
        m = c.mean_sem(fac["excess_loss"])
        rows.append(c.row(
            "fig2a.optimal", STUDY, "Fig. 2a", "One layer of factored attention reaches the "
            "optimal loss", "", m,
            f"test loss / optimal loss - 1 < {OPTIMUM}", c.below(m, OPTIMUM)))
        m = c.mean_sem(fac["excess_over_floor"])
        rows.append(c.row(
            "fig2a.floor", STUDY, "Fig. 2a", "Factored attention reaches the best loss the data "
            "set allows (the truth-started pseudo-likelihood fit)", "", m,
            f"test loss / floor - 1 < {FLOOR}", c.below(m, FLOOR)))
        m = c.mean_sem(fac["pearson_r"])
        rows.append(c.row(
            "fig2b.copy", STUDY, "Fig. 2b", "The factored attention map is a copy of J",
            "", m, f"Pearson r(A, J) > {COPY}", c.above(m, COPY)))
        m = c.mean_sem(fac["recon_error"])
        rows.append(c.row(
            "fig2c.reconstruction", STUDY, "Fig. 2c", "Factored attention recovers J: the "
            "reconstruction error goes to zero", "", m,
            f"||J - cA||^2 / ||J||^2 < {RECONSTRUCTED}", c.below(m, RECONSTRUCTED)))
    loss = {a: _by_realisation(final, a, "test_loss") for a in ("factored", "vanilla1", "vanilla3")}
    for worse, better, fig in (("vanilla3", "factored", "fig2a.order_3_layers"),
                               ("vanilla1", "vanilla3", "fig2a.order_1_layer")):
        if len(loss[worse]) and len(loss[better]):
            m = _paired(loss[worse], loss[better])
            rows.append(c.row(
                fig, STUDY, "Fig. 2a", f"{better} reaches a lower test loss than {worse} "
                "(factored < 3 layers < 1 layer)", "", m,
                f"paired test loss {worse} - {better} > 0", c.above(m, 0.0)))
    return rows


def interpolation_claims(final: pd.DataFrame) -> list[dict]:
    """Fig. 2d: a = 0 (factored attention) is best, and the loss grows with a."""
    interp = final[final["arch"].str.startswith("interp-a")].dropna(subset=["a"])
    if interp["a"].nunique() < 2:
        return []
    excess = interp.pivot_table(index="realisation", columns="a", values="excess_loss")
    a = np.asarray(excess.columns, float)
    lo = a.min()
    gaps = [c.Measure(*_paired_values(excess[k] - excess[lo]), tests=len(a) - 1) for k in a[1:]]
    verdict = c.both(*(c.above(m, 0.0) for m in gaps))
    m = min(gaps, key=lambda g: g.value)
    rows = [c.row("fig2d.a0_best", STUDY, "Fig. 2d", "Complete decoupling (a = 0) gives the "
                  "lowest test loss", "", m, f"paired excess loss at every a > {lo:g} minus at "
                  f"a = {lo:g} > 0 (measured: the smallest; Bonferroni over the {len(a) - 1} a)",
                  verdict)]
    slopes = [np.polyfit(a[np.isfinite(y)], y[np.isfinite(y)], 1)[0]
              for y in excess.to_numpy() if np.isfinite(y).sum() >= 2]
    m = c.mean_sem(slopes)
    rows.append(c.row("fig2d.trend", STUDY, "Fig. 2d", "The test loss increases with the "
                      "perturbation a", "", m, "least-squares slope of excess loss in a > 0",
                      c.above(m, 0.0)))
    return rows


def identity_claims(final: pd.DataFrame, plm: pd.DataFrame) -> list[dict]:
    """MLM with factored attention is pseudo-likelihood inference: same test loss."""
    mlm = _by_realisation(final, "factored", "test_loss")
    fit = plm[plm["kind"] == "factored"].set_index("realisation")["test_loss"]
    if not len(mlm) or not len(fit):
        return []
    m = _paired(mlm / fit, pd.Series(1.0, index=fit.index))
    return [c.row("identity.mlm_plm", STUDY, "Sec. 3", "MLM with factored attention is "
                  "pseudo-likelihood inference of the Potts model", "", m,
                  f"paired test loss MLM / PLM - 1 within +-{IDENTITY}",
                  c.within(m, IDENTITY))]


def replica_claims(replica: pd.DataFrame) -> list[dict]:
    """Fig. 3 left: the replica theory matches the simulations, with the peak at alpha = 1."""
    sims = replica[replica["source"] == "simulation"].dropna(subset=["z"])
    if not len(sims):
        return []
    # each z = (mean - theory) / sem of n simulations is t-distributed with n - 1 dof
    z = stats.norm.ppf(stats.t.cdf(sims["z"], sims["n"] - 1))
    chi2, dof = float(np.sum(z ** 2)), len(sims)
    rows = [c.row("fig3_left.theory", STUDY, "Fig. 3 left", "The replica theory matches the "
                  "simulations exactly", "", c.exact(chi2 / dof, dof),
                  "chi2/dof of the normal scores of (simulation - theory)/sem, p >= 0.05",
                  c.consistent(chi2, dof))]
    lam = sims["lambda"].min()
    th = replica[(replica["source"] == "theory") & np.isclose(replica["lambda"], lam)]
    if len(th):
        peak = float(th.loc[th["eps"].idxmax(), "alpha"])
        inside = PEAK_ALPHA[0] <= peak <= PEAK_ALPHA[1]
        rows.append(c.row(
            "fig3_left.peak", STUDY, "Fig. 3 left", "The generalisation error peaks at alpha = 1",
            "1", c.exact(peak), f"alpha of the theory's maximum (lambda = {lam:g}, the curve the "
            f"simulations match) in [{PEAK_ALPHA[0]}, {PEAK_ALPHA[1]}]",
            c.HOLDS if inside else c.FAILS))
    return rows


def rise(curve: pd.DataFrame) -> tuple[c.Measure, float, float]:
    """The largest rise of the mean test loss with M: over grid points M_k, the mean at M_k
    minus the lowest mean at a smaller M_j. Returns the paired rise (per realisation, M_k minus
    M_j; Bonferroni over the m (m - 1) / 2 pairs of the m grid points it was picked from) and
    the two M."""
    table = curve.pivot_table(index="realisation", columns="M", values="test_loss").dropna(
        axis=1, how="all")
    means = table.mean()
    if len(means) < 2:
        return c.Measure(np.nan, np.nan, 0), np.nan, np.nan
    best, pair = -np.inf, (means.index[0], means.index[1])
    for k in range(1, len(means)):
        j = means.iloc[:k].idxmin()
        if means.iloc[k] - means[j] > best:
            best, pair = means.iloc[k] - means[j], (j, means.index[k])
    m = c.mean_sem(table[pair[1]] - table[pair[0]])
    pairs = len(means) * (len(means) - 1) // 2
    return c.Measure(m.value, m.error, m.n, tests=pairs), float(pair[0]), float(pair[1])


def descent(curve: pd.DataFrame, peak: float) -> c.Measure:
    """The paired fall of the test loss from M = ``peak`` to the largest M of the grid
    (Bonferroni over the grid points the peak was picked from)."""
    table = curve.pivot_table(index="realisation", columns="M", values="test_loss")
    last = table.columns.max()
    if peak >= last:
        return c.Measure(np.nan, np.nan, 0)
    m = c.mean_sem(table[peak] - table[last])
    return c.Measure(m.value, m.error, m.n, tests=len(table.columns))


def sample_complexity_claims(curve: pd.DataFrame, thresholds: pd.DataFrame | None) -> list[dict]:
    """Fig. 3 right: the test loss rises with M at small M (a rise, and a fall after it: a
    peak), the peak lies beyond M/L = 1 and at the separability threshold."""
    if curve["M"].nunique() < 2:
        return []
    L = float((curve["M"] / curve["alpha"]).iloc[0])
    m, low, high = rise(curve)
    up = c.above(m, 0.0)
    rows = [c.row("fig3_right.rise", STUDY, "Fig. 3 right", "The test loss increases when "
                  "adding more data at small alpha", "", m,
                  f"paired test loss at M = {high:g} minus its minimum before, at M = {low:g}, "
                  "> 0 (the largest rise of the mean curve; Bonferroni over the pairs of M)", up)]
    fall = descent(curve, high)
    peak = c.both(up, c.above(fall, 0.0))
    alpha = high / L
    rows.append(c.row(
        "fig3_right.location", STUDY, "Fig. 3 right", "The test loss peaks at a number of "
        "samples per site larger than one", "> 1", c.exact(alpha, m.n),
        f"a peak (the rise, and a fall from M = {high:g} to the largest M) at M/L > 1",
        peak if peak != c.HOLDS else (c.HOLDS if alpha > 1 else c.FAILS)))
    if thresholds is not None and len(thresholds) and "threshold_M" in thresholds:
        censored = thresholds["threshold_M"].isna().any()
        ratio = c.mean_sem(np.log2(high / thresholds["threshold_M"]))
        verdict = (c.NOT_RESOLVED if censored or peak != c.HOLDS
                   else c.within(ratio, 1.0))
        rows.append(c.row(
            "fig3_right.threshold", STUDY, "Fig. 3 right", "The peak sits at the separability "
            "threshold of the training set", "", ratio,
            "log2(peak M / smallest non-separable M) per realisation within +-1 (a factor 2); "
            "not resolved without a resolved peak or with a realisation separable at every M",
            verdict))
    return rows


def potts_claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``)."""
    final = tables["training_final"]
    rows = [*data_claims(tables["data"]), *training_claims(final),
            *interpolation_claims(final), *identity_claims(final, tables["plm"]),
            *replica_claims(tables["replica"]),
            *sample_complexity_claims(tables["sample_complexity"],
                                      tables.get("sample_complexity_threshold"))]
    return c.table(rows)
