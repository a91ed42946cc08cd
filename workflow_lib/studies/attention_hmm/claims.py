"""The attention-paths paper's claims on the hidden-Markov-chain task (Tiberi et al. 2024,
Fig. 2c-e) and the project's protocol checks, measured on the study's tables with the
pre-registered tests of ``workflow_lib.claims``.

The unit is the realisation (training and test sequences, random heads, theory, samples): two
methods or two widths are compared paired per realisation. Every contrast, its direction and the
widths it is taken at are fixed here before the data are seen: "small width" is the smallest
width of the theory's grid, "large width" its largest. The paper is qualitative, so every
threshold below is the project's; each row's criterion states it and the constant's comment says
why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib import claims as c

STUDY = "attention_hmm"
REALISATION = "realisation"
FIGURE = {"four_paths": "Fig. 2c", "two_paths": "Fig. 2e"}
SAMPLES_TOLERANCE = 0.02  # samples "on the theory": within 2 accuracy points, the spread of the
# paper's samples around its theory curve (the sampled accuracy has a binomial s.e.m. of about
# 1 point on 1000 test sequences)
GRAD_MAX = 1e-6  # a solved saddle point: max |dS/dU| / N below this (the stage warns above it)
RHAT = 1.1  # converged chains: the potential scale reduction below this (Gelman et al.)


def _row(id: str, figure: str, statement: str, paper: str, test: c.Test, criterion: str,
         kind: str = c.CLAIM, unit: str = REALISATION) -> dict:
    return c.row(id, STUDY, figure, statement, paper, test, criterion, unit, kind)


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
    """Per experiment: the finite-width theory above the GP limit of all paths at the smallest
    width; its accuracy falling from the smallest to the largest width (towards the GP limit);
    the posterior samples on the theory at every sampled width (TOST)."""
    rows = []
    for experiment in acc["experiment"].unique():
        theory = acc[(acc["experiment"] == experiment) & (acc["method"] == "theory")]
        if not len(theory):
            continue
        figure = FIGURE.get(experiment, experiment)
        small, large = float(theory["N"].min()), float(theory["N"].max())
        at_small = _accuracy(acc, experiment, "theory", small)
        rows.append(_row(
            f"{experiment}.theory_above_gp", figure, "At small width the finite-width theory "
            "generalises better than the GP limit", "", c.greater(_paired(
                at_small, _accuracy(acc, experiment, "gp"))),
            f"paired test accuracy theory (N = {small:g}, the grid's smallest) - GP of all paths "
            "> 0"))
        if large > small:
            rows.append(_row(
                f"{experiment}.accuracy_falls_with_width", figure, "The accuracy decreases as "
                "the width N grows, towards the GP limit", "", c.greater(_paired(
                    at_small, _accuracy(acc, experiment, "theory", large))),
                f"paired test accuracy of the theory at the grid's smallest minus at its largest "
                f"width (N = {small:g} vs {large:g}) > 0"))
        samples = acc[(acc["experiment"] == experiment) & (acc["method"] == "samples")]
        for width in sorted(samples["N"].unique()):
            gap = _paired(_accuracy(acc, experiment, "samples", width),
                          _accuracy(acc, experiment, "theory", width))
            rows.append(_row(
                f"{experiment}.samples_on_theory_N{width:g}", figure, "Posterior samples of the "
                "network agree with the theory", "", c.equivalent(gap, SAMPLES_TOLERANCE),
                f"paired test accuracy samples - theory at N = {width:g} within "
                f"+-{SAMPLES_TOLERANCE} (TOST; the project's tolerance)"))
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
    """The theory's order parameter U: at the smallest width the denoising path enters with a
    negative cross weight to the good path (Fig. 2c and 2e) and the adversarial paths are
    suppressed below their GP weight 1 (Fig. 2c); U approaches the identity, the GP limit, as N
    grows (Fig. 2c bottom)."""
    rows = []
    theory = ops[ops["method"] == "theory"]
    for experiment in theory["experiment"].unique():
        mine = theory[theory["experiment"] == experiment]
        figure = FIGURE.get(experiment, experiment)
        small, large = float(mine["N"].min()), float(mine["N"].max())
        at_small = mine[np.isclose(mine["N"], small)]
        paths = set(at_small["row"])
        if {"g", "d"} <= paths:
            rows.append(_row(
                f"{experiment}.denoising", figure, "The network combines the good path with the "
                "denoising path, subtracting it (negative cross weight)", "",
                c.less(_entry(at_small, "g", "d"), 0.0),
                f"U_gd (theory, N = {small:g}, the grid's smallest) < 0"))
        if {"a1", "a2"} <= paths:
            rows.append(_row(
                f"{experiment}.adversarial_suppressed", figure, "The adversarial paths are "
                "suppressed below their GP weight", "1",
                c.all_of(c.less(_entry(at_small, "a1", "a1"), 1.0),
                         c.less(_entry(at_small, "a2", "a2"), 1.0)),
                f"U_a1a1 < 1 and U_a2a2 < 1 (theory, N = {small:g}; intersection-union of the "
                "two one-sided tests, no correction)"))
        if large > small:
            shrink = _paired(distance_from_identity(at_small),
                             distance_from_identity(mine[np.isclose(mine["N"], large)]))
            rows.append(_row(
                f"{experiment}.gp_limit", figure, "As the width grows, U approaches the identity "
                "(the GP limit: same-path kernels weighed equally, cross-path kernels dropped)",
                "", c.greater(shrink), "paired ||U - I||_F / sqrt(Pi) of the theory at the "
                f"grid's smallest minus at its largest width (N = {small:g} vs {large:g}) > 0"))
    return rows


def pc_claims(pcs: pd.DataFrame) -> list[dict]:
    """Fig. 2d: the finite-width kernel's leading principal components align with the labels
    better than the GP kernel's: the largest overlap among the table's top PCs, paired per
    realisation."""
    rows = []
    for experiment in pcs["experiment"].unique():
        mine = pcs[pcs["experiment"] == experiment]
        best = mine.groupby(["regime", "realisation"])["overlap"].max()
        if not {"fw", "gp"} <= set(best.index.get_level_values("regime")):
            continue
        width, top = float(mine.loc[mine["regime"] == "fw", "N"].iloc[0]), int(mine["rank"].max())
        rows.append(_row(
            f"{experiment}.pc_alignment", "Fig. 2d", "At finite width the kernel's principal "
            "components align with the task labels better than in the GP limit", "",
            c.greater(_paired(best["fw"], best["gp"])),
            f"paired largest |v_k . Y| / sqrt(P) among the top {top} PCs of the training kernel, "
            f"theory at N = {width:g} minus the GP limit, > 0"))
    return rows


def diagnostic_checks(diag: pd.DataFrame) -> list[dict]:
    """Protocol checks: every theory solve is a minimum of the action (gradient below
    ``GRAD_MAX``, positive Hessian) and every sampled width's chains converged (R-hat below
    ``RHAT``)."""
    rows = []
    theory = diag[diag["method"] == "theory"]
    if len(theory):
        ok = (theory["grad_max"] <= GRAD_MAX) & (theory["hessian_min"] > 0)
        rows.append(_row(
            "theory.minimum", "Sec. 3", "The order parameter is the minimum of the action", "",
            c.every(ok, theory["grad_max"]), f"every (realisation, experiment, N): max |dS/dU| / "
            f"N <= {GRAD_MAX:g} and the smallest Hessian eigenvalue > 0; measured: the mean "
            "gradient", c.CHECK, "theory solve"))
    samples = diag[diag["method"] == "samples"]
    if len(samples) and "rhat" in samples:
        runs = samples.groupby(["realisation", "experiment", "N"])["rhat"].first()
        rows.append(_row(
            "samples.converged", "Fig. 2c", "The posterior samples come from converged chains",
            "", c.every(runs < RHAT, runs), f"every (realisation, experiment, N): R-hat < {RHAT} "
            "(NaN with one chain fails); measured: the mean R-hat", c.CHECK, "sampled width"))
    return rows


def hmm_claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``)."""
    return c.table([*accuracy_claims(tables["accuracy"]), *path_claims(tables["order_parameters"]),
                    *pc_claims(tables["pc_overlaps"]), *diagnostic_checks(tables["diagnostics"])])
