"""The Potts paper's claims (Rende et al. 2024, Figs. 2-3), measured on the study's tables.

Each claim is a row of ``workflow_lib.claims``: values are means over realisations (paired
per realisation where two models are compared) with their standard error; the verdict follows
from the 95 % t-interval, so two realisations rarely resolve anything. The tolerances are the
module constants, stated in each row's criterion.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

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


def _paired(a: pd.Series, b: pd.Series) -> c.Measure:
    """Mean and s.e.m. of ``a - b`` over the realisations both have."""
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    return c.mean_sem(both.iloc[:, 0] - both.iloc[:, 1])


def data_claims(data: pd.DataFrame) -> list[dict]:
    """The data protocol: the achieved mean Hamming distance, distinct training sequences and a
    held-out test set."""
    rows = []
    target, tol = data["target_hamming"].iloc[0], data["tolerance"].iloc[0]
    if np.isfinite(target):
        m = c.mean_sem(data["mean_hamming"] - target)
        rows.append(c.row(
            "data.hamming", STUDY, "Sec. 4", "Sequences are sampled at a mean normalised Hamming "
            "distance of 0.3, typical of protein families", f"{target:g}", m,
            f"achieved - target within +-{tol:g} (beta_tuning.tolerance)", c.within(m, tol)))
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
    lo, hi = a.min(), a.max()
    m = c.mean_sem(excess[hi] - excess[lo])
    rows = [c.row("fig2d.a0_best", STUDY, "Fig. 2d", "Complete decoupling (a = 0) gives the "
                  "lowest test loss", "", m, f"paired excess loss at a = {hi:g} minus a = {lo:g}"
                  " > 0", c.above(m, 0.0))]
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
    chi2, dof = float((sims["z"] ** 2).sum()), len(sims)
    rows = [c.row("fig3_left.theory", STUDY, "Fig. 3 left", "The replica theory matches the "
                  "simulations exactly", "", c.exact(chi2 / dof, dof),
                  "chi2/dof of (simulation - theory)/sem with p >= 0.05",
                  c.consistent(chi2, dof))]
    lam = sims["lambda"].min()
    th = replica[(replica["source"] == "theory") & (replica["lambda"] == lam)]
    sm = sims[sims["lambda"] == lam]
    peaks = [float(th.loc[th["eps"].idxmax(), "alpha"]), float(sm.loc[sm["eps"].idxmax(), "alpha"])]
    inside = all(PEAK_ALPHA[0] <= p <= PEAK_ALPHA[1] for p in peaks)
    rows.append(c.row(
        "fig3_left.peak", STUDY, "Fig. 3 left", "The generalisation error peaks at alpha = 1",
        "1", c.exact(peaks[1], len(sm)), f"theory and simulation maxima (lambda = {lam:g}) at "
        f"alpha in [{PEAK_ALPHA[0]}, {PEAK_ALPHA[1]}]; measured: the simulations'",
        c.HOLDS if inside else c.FAILS))
    return rows


def rise(curve: pd.DataFrame) -> tuple[c.Measure, float, float]:
    """The largest rise of the mean test loss with M: over grid points M_k, the mean at M_k
    minus the lowest mean at a smaller M_j; returns the paired rise (per realisation, M_k minus
    M_j) and the two M."""
    table = curve.pivot_table(index="realisation", columns="M", values="test_loss")
    means = table.mean()
    best, pair = -np.inf, (means.index[0], means.index[0])
    for k in range(1, len(means)):
        j = means.iloc[:k].idxmin()
        if means.iloc[k] - means[j] > best:
            best, pair = means.iloc[k] - means[j], (j, means.index[k])
    return c.mean_sem(table[pair[1]] - table[pair[0]]), float(pair[0]), float(pair[1])


def sample_complexity_claims(curve: pd.DataFrame, thresholds: pd.DataFrame | None) -> list[dict]:
    """Fig. 3 right: the test loss rises with M at small M, the peak lies beyond M/L = 1 and at
    the separability threshold."""
    if curve["M"].nunique() < 2:
        return []
    L = float((curve["M"] / curve["alpha"]).iloc[0])
    m, low, high = rise(curve)
    verdict = c.above(m, 0.0)
    rows = [c.row("fig3_right.rise", STUDY, "Fig. 3 right", "The test loss increases when "
                  "adding more data at small alpha", "", m,
                  f"paired test loss at M = {high:g} minus its minimum before, at M = {low:g}, "
                  "> 0", verdict)]
    peak = high / L
    rows.append(c.row("fig3_right.location", STUDY, "Fig. 3 right", "The peak lies at a number "
                      "of samples per site larger than one", "> 1", c.exact(peak),
                      "M/L at the peak of a resolved rise > 1",
                      c.NOT_RESOLVED if verdict != c.HOLDS else (c.HOLDS if peak > 1 else c.FAILS)))
    if thresholds is not None and len(thresholds) and "threshold_M" in thresholds:
        t = c.mean_sem(thresholds["threshold_M"] / L)
        m2 = c.Measure(peak - t.value, t.error, t.n)
        ok = c.NOT_RESOLVED if verdict != c.HOLDS else c.within(
            c.Measure(np.log2(high / (t.value * L)), 0.0, max(t.n, 2)), 1.0)
        rows.append(c.row("fig3_right.threshold", STUDY, "Fig. 3 right", "The peak sits at the "
                          "separability threshold of the training set", "", m2,
                          "peak M within a factor 2 of the mean smallest non-separable M; "
                          "measured: peak M/L minus threshold M/L", ok))
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
