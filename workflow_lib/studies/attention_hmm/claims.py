"""The attention-paths paper's claims on the hidden-Markov-chain task (Tiberi et al. 2024,
Fig. 2c-e) and the project's checks, measured on the study's tables with the pre-registered tests
of ``workflow_lib.claims.statistics``.

The unit is the realisation (training and test sequences, random heads, theory, samples): two
methods or two widths are compared paired per realisation. Every contrast, its direction and the
widths it is taken at are fixed here before the data are seen: "small width" is the smallest
width of the theory's grid, "large width" its largest. The paper is qualitative, so every
threshold below is the project's, a ``Criterion`` with its reason.

What the theory's action guarantees by construction (U tends to the identity and the accuracy
to the GP's as N grows: the entropy term grows with N) is a ``check`` of the solver, never a
claim. Every row that reads the theory is gated by its experiment's ``theory_minimum`` check,
every row that reads samples by the ``samples_converged`` check of its width.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib.claims import statistics as c

STUDY = "attention_hmm"
REALISATION = "realisation"
FIGURE = {"four_paths": "Fig. 2c", "two_paths": "Fig. 2e"}
GOOD, GOOD_DENOISING = "g", "g+d"  # the networks of the GP lines of Fig. 2c (dashed, dotted)

ACCURACY_MARGIN = c.Criterion(
    "ACCURACY_MARGIN", 0.02,
    "calling two accuracies on the same test sequences equal (or one not below the other) when "
    "they differ by more than the sampling noise of one accuracy on the test set",
    "twice the binomial s.e.m. of one accuracy near 0.9 on the paper's 1000 test sequences "
    "(2 sqrt(0.9 x 0.1 / 1000) = 0.019); a fifth of the finite-width gain over the GP that "
    "Fig. 2c shows at N = 10 (about 10 points); the project's margin")
GP_WEIGHT = c.Criterion(
    "GP_WEIGHT", 1.0,
    "calling a path up- or down-weighted when it keeps the weight the GP limit gives every path",
    "the GP limit of the action: U = sigma^(2(L+1)) I (attention.theory.gp_order_parameters), "
    "1 at the paper's unit prior variances (paths.prior_variance = 1)")
GRAD_MAX = c.Criterion(
    "GRAD_MAX", 1e-6,
    "reading an order parameter from a solve that stopped short of the saddle point",
    "the solver stops at max |dS/dU| / N below paths.solver.gtol (1e-10 by default) and warns "
    "above 1e-6 (attention.experiment.width_sweep); the GP start has gradients of order 1")
RHAT = c.Criterion(
    "RHAT", 1.1,
    "comparing the theory with chains that have not mixed",
    "the potential scale reduction of converged chains is close to 1; 1.1 is the customary "
    "bound (Gelman et al., Bayesian Data Analysis, 3rd ed., Sec. 11.4)")


def _row(id: str, figure: str, statement: str, paper: str, test: c.Test, criterion: str,
         kind: str = c.CLAIM, unit: str = REALISATION, gates: tuple[str, ...] = ()) -> dict:
    return c.row(id, STUDY, figure, statement, paper, test, criterion, unit, kind, gates)


def theory_check(experiment: str) -> str:
    """The id of the check that every theory solve of ``experiment`` is a minimum."""
    return f"{experiment}.theory_minimum"


def samples_check(experiment: str, width: float) -> str:
    """The id of the check that the chains of ``experiment`` at ``width`` converged."""
    return f"{experiment}.samples_converged_N{width:g}"


def _paired(a: pd.Series, b: pd.Series) -> pd.Series:
    """``a - b`` over the realisations both have."""
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    return both.iloc[:, 0] - both.iloc[:, 1]


def _accuracy(acc: pd.DataFrame, experiment: str, method: str, N: float | None = None,
              network: str = "all") -> pd.Series:
    """Per realisation, the test accuracy of ``method`` (at width ``N``) of ``network``."""
    rows = acc[(acc["experiment"] == experiment) & (acc["method"] == method)
               & (acc["network"] == network)]
    if N is not None:
        rows = rows[np.isclose(rows["N"], N)]
    return rows.set_index("realisation")["accuracy"]


def accuracy_claims(acc: pd.DataFrame) -> list[dict]:
    """Per experiment, at the smallest width: the finite-width theory above the GP limit of all
    paths and of the good path alone, and not below the GP of the good and denoising paths
    (non-inferiority; Fig. 2c's dashed and dotted lines, where the table has them); the checks
    that the theory's accuracy falls from the smallest to the largest width and equals the GP's
    at the largest (TOST); the posterior samples on the theory at every sampled width (TOST)."""
    margin = ACCURACY_MARGIN.value
    rows = []
    for experiment in acc["experiment"].unique():
        theory = acc[(acc["experiment"] == experiment) & (acc["method"] == "theory")]
        if not len(theory):
            continue
        figure, gate = FIGURE.get(experiment, experiment), (theory_check(experiment),)
        small, large = float(theory["N"].min()), float(theory["N"].max())
        at_small = _accuracy(acc, experiment, "theory", small)
        gp = {net: _accuracy(acc, experiment, "gp", network=net) for net in ("all", GOOD,
                                                                               GOOD_DENOISING)}
        where = f"theory (N = {small:g}, the grid's smallest)"
        rows.append(_row(
            f"{experiment}.theory_above_gp", figure, "At small width the finite-width theory "
            "generalises better than the GP limit", "", c.greater(_paired(at_small, gp["all"])),
            f"paired test accuracy {where} - GP of all paths > 0", gates=gate))
        if len(gp[GOOD]):
            rows.append(_row(
                f"{experiment}.theory_above_good_path", figure, "At small width the finite-width "
                "theory generalises better than the GP of the good path alone (dashed line)", "",
                c.greater(_paired(at_small, gp[GOOD])),
                f"paired test accuracy {where} - GP of the good path > 0", gates=gate))
        if len(gp[GOOD_DENOISING]):
            rows.append(_row(
                f"{experiment}.theory_reaches_good_denoising", figure, "At small width the "
                "finite-width theory reaches the GP of the good and denoising paths (dotted "
                "line)", "", c.greater(_paired(at_small, gp[GOOD_DENOISING]), -margin),
                f"paired test accuracy {where} - GP of the good and denoising paths > "
                f"-{margin:g} (non-inferiority; ACCURACY_MARGIN)", gates=gate))
        if large > small:
            at_large = _accuracy(acc, experiment, "theory", large)
            rows.append(_row(
                f"{experiment}.accuracy_falls_with_width", figure, "The theory's accuracy "
                "decreases as the width N grows, towards the GP limit (the action's entropy "
                "term grows with N)", "", c.greater(_paired(at_small, at_large)),
                f"paired test accuracy of the theory at the grid's smallest minus at its largest "
                f"width (N = {small:g} vs {large:g}) > 0", c.CHECK, gates=gate))
            rows.append(_row(
                f"{experiment}.large_width_is_gp", figure, "At large width the theory's accuracy "
                "is the GP limit's (the action's GP limit)", "",
                c.equivalent(_paired(at_large, gp["all"]), margin),
                f"paired test accuracy theory (N = {large:g}, the grid's largest) - GP of all "
                f"paths within +-{margin:g} (TOST; ACCURACY_MARGIN)", c.CHECK, gates=gate))
        samples = acc[(acc["experiment"] == experiment) & (acc["method"] == "samples")]
        for width in sorted(samples["N"].unique()):
            gap = _paired(_accuracy(acc, experiment, "samples", width),
                          _accuracy(acc, experiment, "theory", width))
            rows.append(_row(
                f"{experiment}.samples_on_theory_N{width:g}", figure, "Posterior samples of the "
                "network agree with the theory", "", c.equivalent(gap, margin),
                f"paired test accuracy samples - theory at N = {width:g} within +-{margin:g} "
                "(TOST; ACCURACY_MARGIN)", gates=(*gate, samples_check(experiment, width))))
    return rows


def _entry(ops: pd.DataFrame, row: str, col: str) -> pd.Series:
    """Per realisation, ``U[row, col]`` of the order-parameter rows ``ops`` (one width)."""
    e = ops[(ops["row"] == row) & (ops["col"] == col)]
    return e.set_index("realisation")["value"]


def distance_from_identity(ops: pd.DataFrame) -> pd.Series:
    """Per realisation, ``||U - I||_F / sqrt(Pi)`` of the order-parameter rows ``ops`` (one
    width and experiment: ``Pi^2`` entries per realisation); the GP limit has ``U = I``."""
    eye = (ops["row"] == ops["col"]).astype(float)
    sq = (ops["value"] - eye) ** 2
    per = sq.groupby(ops["realisation"]).agg(["sum", "count"])
    paths = np.sqrt(per["count"])
    return np.sqrt(per["sum"] / paths)


def path_claims(ops: pd.DataFrame) -> list[dict]:
    """The theory's order parameter U at the smallest width: the good path up-weighted above its
    GP weight (Fig. 2c and 2e), the denoising path entering with a negative cross weight to it,
    the adversarial paths suppressed below their GP weight (Fig. 2c); the check that U
    approaches the identity, the GP limit, as N grows."""
    rows = []
    theory = ops[ops["method"] == "theory"]
    weight = GP_WEIGHT.value
    for experiment in theory["experiment"].unique():
        mine = theory[theory["experiment"] == experiment]
        figure, gate = FIGURE.get(experiment, experiment), (theory_check(experiment),)
        small, large = float(mine["N"].min()), float(mine["N"].max())
        at_small = mine[np.isclose(mine["N"], small)]
        paths = set(at_small["row"])
        where = f"theory, N = {small:g}, the grid's smallest"
        if "g" in paths:
            rows.append(_row(
                f"{experiment}.good_path_upweighted", figure, "The good path is weighted above "
                "its GP weight", "", c.greater(_entry(at_small, "g", "g"), weight),
                f"U_gg ({where}) > {weight:g} (GP_WEIGHT)", gates=gate))
        if {"g", "d"} <= paths:
            rows.append(_row(
                f"{experiment}.denoising", figure, "The network combines the good path with the "
                "denoising path, subtracting it (negative cross weight)", "",
                c.less(_entry(at_small, "g", "d"), 0.0), f"U_gd ({where}) < 0", gates=gate))
        if {"a1", "a2"} <= paths:
            rows.append(_row(
                f"{experiment}.adversarial_suppressed", figure, "The adversarial paths are "
                "suppressed below their GP weight", f"{weight:g}",
                c.all_of(c.less(_entry(at_small, "a1", "a1"), weight),
                         c.less(_entry(at_small, "a2", "a2"), weight)),
                f"U_a1a1 < {weight:g} and U_a2a2 < {weight:g} ({where}; GP_WEIGHT; "
                "intersection-union of the two one-sided tests, no correction)", gates=gate))
        if large > small:
            shrink = _paired(distance_from_identity(at_small),
                             distance_from_identity(mine[np.isclose(mine["N"], large)]))
            rows.append(_row(
                f"{experiment}.gp_limit", figure, "As the width grows, U approaches the identity "
                "(the action's GP limit: same-path kernels weighed equally, cross-path kernels "
                "dropped)", "", c.greater(shrink), "paired ||U - I||_F / sqrt(Pi) of the theory "
                f"at the grid's smallest minus at its largest width (N = {small:g} vs "
                f"{large:g}) > 0", c.CHECK, gates=gate))
    return rows


def label_share(pcs: pd.DataFrame, by: tuple[str, ...] = ("regime", "realisation")
                ) -> pd.Series:
    """Per group of ``by``, ``sum_k (v_k . Y)^2 / P`` over the PC-overlap rows ``pcs`` (the
    kernel's top PCs): the share of the label vector in the span of those principal components
    (orthonormal PCs: the squared cosine between ``Y`` and that span). A fixed location: every
    PC the table holds, not the one that aligns best."""
    return (pcs["overlap"] ** 2).groupby([pcs[k] for k in by]).sum()


def pc_claims(pcs: pd.DataFrame) -> list[dict]:
    """Fig. 2d: the labels lie more in the span of the finite-width kernel's leading principal
    components than in the GP kernel's (``label_share`` over every PC the table holds, a
    location fixed by the config's ``n_pcs``, the paper's panel's 30), paired per
    realisation."""
    rows = []
    for experiment in pcs["experiment"].unique():
        mine = pcs[pcs["experiment"] == experiment]
        share = label_share(mine)
        if not {"fw", "gp"} <= set(share.index.get_level_values("regime")):
            continue
        width, top = float(mine.loc[mine["regime"] == "fw", "N"].iloc[0]), int(mine["rank"].max())
        rows.append(_row(
            f"{experiment}.pc_alignment", "Fig. 2d", "At finite width the kernel's leading "
            "principal components align with the task labels better than in the GP limit", "",
            c.greater(_paired(share["fw"], share["gp"])),
            f"paired sum of (v_k . Y)^2 / P over the top {top} PCs of the training kernel (the "
            f"share of the labels in their span), theory at N = {width:g} minus the GP limit, > "
            "0", gates=(theory_check(experiment),)))
    return rows


def diagnostic_checks(diag: pd.DataFrame) -> list[dict]:
    """Checks of the solver and the sampler, per experiment: every theory solve is a minimum of
    the action (gradient below ``GRAD_MAX``, positive Hessian); per sampled width, the chains
    converged (R-hat below ``RHAT``)."""
    rows = []
    for experiment in diag["experiment"].unique():
        mine = diag[diag["experiment"] == experiment]
        figure = FIGURE.get(experiment, experiment)
        theory = mine[mine["method"] == "theory"]
        if len(theory):
            ok = (theory["grad_max"] <= GRAD_MAX.value) & (theory["hessian_min"] > 0)
            rows.append(_row(
                theory_check(experiment), figure, "The order parameter is the minimum of the "
                "action", "", c.every(ok, theory["grad_max"]), f"every (realisation, N): max "
                f"|dS/dU| / N <= {GRAD_MAX.value:g} (GRAD_MAX) and the smallest Hessian "
                "eigenvalue > 0; measured: the mean gradient", c.CHECK, "theory solve"))
        samples = mine[mine["method"] == "samples"]
        if not len(samples) or "rhat" not in samples:
            continue
        for width, chains in samples.groupby("N"):
            runs = chains.groupby("realisation")["rhat"].first()
            rows.append(_row(
                samples_check(experiment, width), figure, "The posterior samples come from "
                "converged chains", "", c.every(runs < RHAT.value, runs),
                f"every realisation at N = {width:g}: R-hat < {RHAT.value:g} (RHAT; NaN with one "
                "chain fails); measured: the mean R-hat", c.CHECK, "sampled realisation"))
    return rows


def hmm_claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``)."""
    return c.table([*accuracy_claims(tables["accuracy"]), *path_claims(tables["order_parameters"]),
                    *pc_claims(tables["pc_overlaps"]), *diagnostic_checks(tables["diagnostics"])])
