"""The Potts paper's claims (Rende et al. 2024, Figs. 2-3) and the project's protocol checks,
measured on the study's tables with the pre-registered tests of ``workflow_lib.claims``.

The unit is the realisation (couplings, data set and fits): two models are compared paired per
realisation. Every contrast, its direction and the location it is taken at are fixed here, before
the data are seen; where a location is needed (the peak of Fig. 3 right) it comes from the
training data alone (``tables.separability_threshold``). The paper is qualitative, so every
threshold below is the project's; each row's criterion states it and the constant's comment says
why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from workflow_lib import claims as c

STUDY = "potts_paper"
REALISATION = "realisation"
DISTINCT = 0.95  # "a family of distinct sequences": at least this fraction distinct per data set
HELD_OUT = 0.05  # "held out": at most this fraction of the test set also in the training set
EXCESS_MARGIN = 2.0  # "reaches the optimal loss": below twice the expected finite-sample excess
# P / (2 M L) of a fit of P parameters to M L masked sites (the pseudo-likelihood's sandwich
# factor is not 1 and the l2 penalty adds a bias, hence a margin of 2)
FLOOR = 0.01  # "reaches the data set's floor": at most 1 % above the truth-started PLM fit
COPY = 0.95  # "A is a copy of J": Pearson r above this (the paper shows r close to 1)
RECONSTRUCTION_MARGIN = 0.05  # reconstruction error within this of the truth-started fit's
IDENTITY = 0.01  # MLM factored attention = factored pseudo-likelihood: relative gap within this
CONVERGED = 0.9  # "converges": the epoch at which a run has made 90 % of its own improvement
PEAK_ALPHA = (0.8, 1.25)  # "the peak of Fig. 3 left is at alpha = 1": grid points in this range
TAIL = (-1.1, -0.9)  # "the error decays as 1 / alpha": log-log slope of its excess over the noise
TAIL_ALPHA = 5.0  # the tail: the theory's grid points beyond this alpha (at least 3 needed)


def _by_realisation(final: pd.DataFrame, arch: str, column: str) -> pd.Series:
    rows = final[final["arch"] == arch]
    return rows.set_index("realisation")[column]


def _paired(a: pd.Series, b: pd.Series) -> pd.Series:
    """``a - b`` over the realisations both have."""
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    return both.iloc[:, 0] - both.iloc[:, 1]


def _row(id: str, figure: str, statement: str, paper: str, test: c.Test, criterion: str,
         kind: str = c.CLAIM) -> dict:
    return c.row(id, STUDY, figure, statement, paper, test, criterion, REALISATION, kind)


def data_checks(data: pd.DataFrame) -> list[dict]:
    """Protocol checks, each realisation's data set on its own: the achieved mean Hamming
    distance at its target, distinct training sequences, a held-out test set."""
    if not len(data):
        return []
    rows = []
    target, tol = data["target_hamming"].iloc[0], data["tolerance"].iloc[0]
    if np.isfinite(target):
        gap = data["mean_hamming"] - target
        rows.append(_row(
            "data.hamming", "Sec. 4", "Sequences are sampled at the protocol's mean normalised "
            f"Hamming distance (this run: {target:g}), typical of protein families", "0.3",
            c.every(gap.abs() <= tol, gap), f"every realisation: |achieved - target| <= {tol:g} "
            "(beta_tuning.tolerance); measured: the mean gap", c.CHECK))
    rows.append(_row(
        "data.distinct", "Sec. 4", "The training set is a family of distinct sequences, as a "
        "protein family is", "", c.every(data["distinct_fraction"] > DISTINCT,
                                         data["distinct_fraction"]),
        f"every realisation: fraction of distinct training sequences > {DISTINCT}", c.CHECK))
    rows.append(_row(
        "data.held_out", "Fig. 2a", "Test losses are measured on held-out sequences", "",
        c.every(data["test_in_train"] < HELD_OUT, data["test_in_train"]),
        f"every realisation: fraction of test sequences also in the training set < {HELD_OUT}",
        c.CHECK))
    return rows


def expected_excess(data: pd.DataFrame) -> pd.Series:
    """Per realisation, the expected excess test loss (nats per masked site) of a fit of factored
    attention's P = L (L - 1) + C^2 parameters to n_train L masked sites: P / (2 n_train L)."""
    d = data.set_index("realisation")
    return (d["L"] * (d["L"] - 1) + d["C"] ** 2) / (2 * d["n_train"] * d["L"])


def epochs_to_converge(history: pd.DataFrame, arch: str) -> pd.Series:
    """Per realisation, the first evaluated epoch at which ``arch``'s test loss has made
    ``CONVERGED`` of its own improvement (first evaluation to last)."""
    out = {}
    for r, h in history[history["arch"] == arch].sort_values("epoch").groupby("realisation"):
        loss = h["test_loss"].to_numpy()
        target = loss[-1] + (1 - CONVERGED) * (loss[0] - loss[-1])
        out[r] = float(h["epoch"].to_numpy()[np.argmax(loss <= target)])
    return pd.Series(out, dtype=float)


def training_claims(final: pd.DataFrame, history: pd.DataFrame, plm: pd.DataFrame,
                    data: pd.DataFrame) -> list[dict]:
    """Fig. 2a-c: factored attention at the optimum and at the data set's floor, faster than the
    transformers and better than them, its map a copy of J where theirs are not."""
    rows = []
    fac = final[final["arch"] == "factored"].set_index("realisation")
    vanilla = [a for a in ("vanilla1", "vanilla3") if (final["arch"] == a).any()]
    if len(fac):
        excess = (fac["test_loss"] - fac["optimal_loss"]) / expected_excess(data)
        rows.append(_row(
            "fig2a.optimal", "Fig. 2a", "One layer of factored attention reaches the optimal "
            "loss", "", c.less(excess.dropna(), EXCESS_MARGIN),
            "(test loss - optimal loss) / the expected finite-sample excess P/(2 M L) < "
            f"{EXCESS_MARGIN:g} (the project's margin: the pseudo-likelihood is not the "
            "likelihood)"))
        if fac["excess_over_floor"].notna().any():
            rows.append(_row(
                "fig2a.floor", "Fig. 2a", "Factored attention reaches the best loss the data set "
                "allows (the truth-started pseudo-likelihood fit)", "",
                c.less(fac["excess_over_floor"], FLOOR), f"test loss / floor - 1 < {FLOOR}"))
        rows.append(_row(
            "fig2b.copy", "Fig. 2b", "The factored attention map is a copy of J", "",
            c.correlation_above(fac["pearson_r"], COPY), f"Pearson r(A, J) > {COPY}"))
        floor = plm[plm["kind"] == "factored_from_truth"].set_index("realisation")
        if len(floor):
            gap = _paired(fac["recon_error"], floor["recon_error"])
            rows.append(_row(
                "fig2c.reconstruction", "Fig. 2c", "Factored attention recovers J as well as the "
                "data allow: its reconstruction error reaches the truth-started fit's", "",
                c.less(gap, RECONSTRUCTION_MARGIN), "paired ||J - cA||^2/||J||^2 of MLM minus "
                f"that of the truth-started pseudo-likelihood fit < {RECONSTRUCTION_MARGIN}"))
    for arch in vanilla if len(fac) else []:
        r_other = _by_realisation(final, arch, "pearson_r")
        rows.append(_row(
            f"fig2b.partial_{arch}", "Fig. 2b", f"The {arch} attention map recovers J only "
            "partly", "", c.correlation_gap(fac["pearson_r"], r_other),
            f"paired Fisher z of r(A, J): factored - {arch} > 0"))
        slow = _paired(epochs_to_converge(history, arch), epochs_to_converge(history, "factored"))
        rows.append(_row(
            f"fig2a.faster_{arch}", "Fig. 2a", f"Factored attention converges faster than "
            f"{arch}", "", c.greater(slow), f"paired epochs to {100 * CONVERGED:g} % of the run's "
            f"own test-loss improvement: {arch} - factored > 0"))
    loss = {a: _by_realisation(final, a, "test_loss") for a in ("factored", "vanilla1", "vanilla3")}
    for worse, better, id in (("vanilla3", "factored", "fig2a.order_3_layers"),
                              ("vanilla1", "vanilla3", "fig2a.order_1_layer")):
        if len(loss[worse]) and len(loss[better]):
            rows.append(_row(
                id, "Fig. 2a", f"{better} reaches a lower test loss than {worse} (factored < 3 "
                "layers < 1 layer)", "", c.greater(_paired(loss[worse], loss[better])),
                f"paired test loss {worse} - {better} > 0 (nats per masked site)"))
    return rows


def interpolation_claims(final: pd.DataFrame) -> list[dict]:
    """Fig. 2d: a = 0 (factored attention) beats every a > 0, and the loss grows with a."""
    interp = final[final["arch"].str.startswith("interp-a")].dropna(subset=["a"])
    if interp["a"].nunique() < 2:
        return []
    excess = interp.pivot_table(index="realisation", columns="a", values="excess_loss")
    a = np.asarray(excess.columns, float)
    lo = a.min()
    rows = [_row("fig2d.a0_best", "Fig. 2d", "Complete decoupling (a = 0) gives the lowest test "
                 "loss", "", c.all_of(*(c.greater(excess[k] - excess[lo]) for k in a[1:])),
                 f"paired excess loss at a minus at a = {lo:g} > 0 for every one of the "
                 f"{len(a) - 1} a > {lo:g} (intersection-union: each one-sided, no correction)")]
    slopes = [np.polyfit(a[np.isfinite(y)], y[np.isfinite(y)], 1)[0]
              for y in excess.to_numpy() if np.isfinite(y).sum() >= 2]
    rows.append(_row("fig2d.trend", "Fig. 2d", "The test loss increases with the perturbation "
                     "a", "", c.greater(slopes), "least-squares slope of excess loss in a > 0"))
    return rows


def identity_claims(final: pd.DataFrame, plm: pd.DataFrame) -> list[dict]:
    """MLM with factored attention is pseudo-likelihood inference: the same test loss."""
    mlm = _by_realisation(final, "factored", "test_loss")
    fit = plm[plm["kind"] == "factored"].set_index("realisation")["test_loss"]
    if not len(mlm) or not len(fit):
        return []
    ratio = _paired(mlm / fit, pd.Series(1.0, index=fit.index))
    return [_row("identity.mlm_plm", "Sec. 3", "MLM with factored attention is "
                 "pseudo-likelihood inference of the Potts model", "",
                 c.equivalent(ratio, IDENTITY),
                 f"paired test loss MLM / PLM - 1 within +-{IDENTITY} (TOST)")]


def replica_claims(replica: pd.DataFrame) -> list[dict]:
    """Fig. 3 left: the replica theory matches the simulations; its curve (at the smallest
    lambda, the one the simulations match) rises from alpha = 0 with no initial decay, peaks at
    alpha = 1 and decays as 1 / alpha."""
    sims = replica[replica["source"] == "simulation"].dropna(subset=["z"])
    if not len(sims):
        return []
    # each z = (mean - theory) / sem of n simulations is t-distributed with n - 1 dof
    z = stats.norm.ppf(stats.t.cdf(sims["z"], sims["n"] - 1))
    rows = [_row("fig3_left.theory", "Fig. 3 left", "The replica theory matches the simulations "
                 "exactly", "", c.consistent(float(np.sum(z ** 2)), len(sims)),
                 "chi2 of the normal scores of (simulation - theory)/sem, p >= 0.05")]
    lam = sims["lambda"].min()
    th = replica[(replica["source"] == "theory") & np.isclose(replica["lambda"], lam)]
    th = th.sort_values("alpha")
    if not len(th):
        return rows
    alpha, eps = th["alpha"].to_numpy(float), th["eps"].to_numpy(float)
    k = int(np.argmax(eps))
    rows.append(_row(
        "fig3_left.peak", "Fig. 3 left", "The generalisation error peaks at alpha = 1", "1",
        c.exact(alpha[k], PEAK_ALPHA[0] <= alpha[k] <= PEAK_ALPHA[1]),
        f"alpha of the theory's maximum (lambda = {lam:g}) in [{PEAK_ALPHA[0]}, "
        f"{PEAK_ALPHA[1]}]"))
    rises = np.diff(eps[: k + 1])
    rows.append(_row(
        "fig3_left.no_initial_decay", "Fig. 3 left", "There is no initial decay: the error rises "
        "from the smallest alpha up to the peak", "", c.exact(float(rises.min(initial=0.0)),
                                                             bool(np.all(rises >= 0))),
        f"smallest step of the theory (lambda = {lam:g}) between its first grid point and its "
        "maximum >= 0"))
    tail = alpha > max(TAIL_ALPHA, alpha[k])
    if tail.sum() >= 3:
        excess = eps[tail] - th["sigma2"].to_numpy(float)[tail]
        slope = float(np.polyfit(np.log(alpha[tail] - 1), np.log(excess), 1)[0])
        test = c.exact(slope, TAIL[0] <= slope <= TAIL[1])
    else:
        test = c.Test("exact (deterministic)", np.nan, 0.0, int(tail.sum()), np.nan, np.nan,
                      np.nan, c.NOT_RESOLVED)
    rows.append(_row(
        "fig3_left.tail", "Fig. 3 left", "At large alpha the error decays as 1 / alpha to the "
        "noise floor", "-1", test, f"log-log slope of the theory's excess over the label noise "
        f"(lambda = {lam:g}) in alpha - 1, over alpha > {TAIL_ALPHA:g}, in [{TAIL[0]}, "
        f"{TAIL[1]}] (the replica result sigma2 alpha / (alpha - 1); not resolved with fewer "
        "than 3 grid points there)"))
    return rows


def _loss_at(curve: pd.DataFrame, where: pd.DataFrame, column: str) -> pd.Series:
    """Per realisation, the test loss at the grid point ``where[column]`` (NaN where none)."""
    loss = curve.set_index(["realisation", "M"])["test_loss"]
    keys = list(zip(where["realisation"], where[column], strict=True))
    return pd.Series([loss.get(k, np.nan) for k in keys], index=where["realisation"], dtype=float)


def _beyond_one(alpha: pd.Series) -> c.Test:
    """One-sided t of "the per-realisation M*/L exceed 1" on the log scale (M* is a grid point
    and its spread multiplicative); the value is the geometric mean."""
    t = c.greater(np.log(alpha))
    return c.Test(t.name + " on log", float(np.exp(t.value)), t.error, t.n, t.statistic, t.p,
                  t.p_exact, t.verdict)


def sample_complexity_claims(curve: pd.DataFrame, where: pd.DataFrame) -> list[dict]:
    """Fig. 3 right, at each realisation's pre-registered location (``where``: the
    ``sample_complexity_threshold`` table, ``tables.separability_threshold``): the test
    loss rises from the smallest M to it (more data hurts at small alpha), falls from it to the
    largest M (a peak: an intersection-union test of the rise and the fall), the location lies
    beyond M/L = 1, and the loss is largest at the separability edge (the location and the grid
    point after it) against the grid points around them."""
    if curve["M"].nunique() < 2 or not len(where):
        return []
    at = where.dropna(subset=["location_M"])
    peak_loss = _loss_at(curve, at, "location_M")
    rise = c.greater(peak_loss - _loss_at(curve, at, "M_min"))
    fall = c.greater(peak_loss - _loss_at(curve, at, "M_max"))
    where_how = ("M* per realisation: the largest M whose converged fit separates its training "
                 "set, below the first near-duplicate pair (training data only); "
                 f"{len(at)} of {len(where)} realisations have one")
    rows = [
        _row("fig3_right.rise", "Fig. 3 right", "The test loss increases when adding more data "
             "at small alpha", "", rise, "paired test loss at M* minus at the smallest M > 0 "
             f"(nats per masked site); {where_how}"),
        _row("fig3_right.location", "Fig. 3 right", "The test loss peaks at a number of samples "
             "per site larger than one", "> 1",
             c.all_of(rise, fall, _beyond_one(at["location_M"] / at["L"])),
             "intersection-union: the rise, a fall from M* to the largest M > 0, and M*/L > 1 "
             f"(one-sided t on log M*/L; measured: the binding part); {where_how}"),
    ]
    edge = pd.concat([peak_loss, _loss_at(curve, at, "after_M")], axis=1).max(axis=1)
    around = pd.concat([_loss_at(curve, at, "before_M"), _loss_at(curve, at, "after2_M")],
                       axis=1).max(axis=1)
    rows.append(_row(
        "fig3_right.threshold", "Fig. 3 right", "The peak sits at the separability threshold of "
        "the training set", "", c.greater(edge - around),
        "paired: the larger test loss at M* and the grid point after it (the separability edge) "
        "minus the larger at the grid points before M* and after those two, > 0; " + where_how))
    return rows


def consistency_claims(curve: pd.DataFrame) -> list[dict]:
    """Pseudo-likelihood is consistent: its couplings approach J as M grows (the upper half of
    the M grid, beyond any peak of the quick and paper grids)."""
    grid = np.sort(curve["M"].unique())
    upper = curve[curve["M"] >= grid[len(grid) // 2]]
    if upper["M"].nunique() < 2:
        return []
    z = np.arctanh(np.clip(upper["pearson_r"], -1 + 1e-12, 1 - 1e-12))
    slopes = [np.polyfit(np.log(g["M"]), z[g.index], 1)[0] for _, g in upper.groupby("realisation")]
    return [_row("plm.consistency", "Sec. 3", "Pseudo-likelihood inference is consistent: the "
                 "inferred couplings approach J as the number of samples grows", "",
                 c.greater(slopes), "least-squares slope of the Fisher z of r(A, J) in log M over "
                 f"the upper half of the M grid (M >= {grid[len(grid) // 2]:g}) > 0")]


def potts_claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``)."""
    final, plm, curve = tables["training_final"], tables["plm"], tables["sample_complexity"]
    rows = [*training_claims(final, tables["training_history"], plm, tables["data"]),
            *interpolation_claims(final), *identity_claims(final, plm),
            *replica_claims(tables["replica"]),
            *sample_complexity_claims(curve, tables["sample_complexity_threshold"]),
            *consistency_claims(curve), *data_checks(tables["data"])]
    return c.table(rows)
