"""The attention-paths paper's claims on one-shot Omniglot (Tiberi et al. 2024, Fig. 3b-f),
measured on the study's tables with the pre-registered tests of ``workflow_lib.claims.statistics``.

The study has one trained model and one theory, so the units are those its tables resample:
test episodes (every method is scored on the same ones, so two methods are compared paired per
episode), paths (the order parameter's rows and columns), heads, and the random orders of the
pruning baseline. Every contrast, its direction and the widths it is taken at are fixed here
before the data are seen: "small width" is the smallest width of the theory's grid, "large
width" its largest, each at the temperature chosen on validation episodes. The paper is
qualitative, so every threshold below is the project's, a ``Criterion`` with its reason. What the
theory's action guarantees by construction (the accuracy tends to the GP's as N grows) is a
``check``, never a claim. The study's tables hold no solver or sampler diagnostics, so no row is
gated.

Four tests that ``workflow_lib.claims.statistics`` lacks live here: the exact binomial test of one
accuracy against a bound, a paired TOST on thousands of episodes, the Mantel permutation test of
two path-path matrices, and the exact permutation test of a rank correlation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from workflow_lib.claims import statistics as c
from workflow_lib.studies.attention_hmm.claims import label_share

STUDY = "omniglot"
EPISODE, PATH, HEAD, ORDER, THEORY = ("episode", "path", "head", "random order",
                                      "theory (deterministic)")
PAPER_ACCURACY = 0.838  # unpruned gradient-descent test accuracy of the paper's model
TARGET_ACCURACY = c.Criterion(
    "TARGET_ACCURACY", 0.70,
    "calling a model that barely beats chance (0.5 on two-way episodes) one that solves the task",
    "the project's target for its CPU-sized model trained on 136 characters; the paper's 83.8 % "
    "is for a model 8x wider trained on 1028 characters")
ACCURACY_MARGIN = c.Criterion(
    "ACCURACY_MARGIN", 0.02,
    "calling two accuracies on the same test episodes equal when they differ by more than the "
    "sampling noise of one accuracy on the paper's test set",
    "one to two binomial s.e.m. of one accuracy near 0.8 on the paper's 1000 test episodes "
    "(sqrt(0.8 x 0.2 / 1000) = 0.013); the margin of the hidden-Markov task "
    "(attention_hmm.claims.ACCURACY_MARGIN); the project's margin")
PERMUTATIONS = 9999  # random relabellings of the Mantel test (its p resolves 1e-4)
PERMUTATION_SEED = 0  # fixed: the verdict is a function of the tables alone
TIE = 1e-12  # permuted statistics this close to the observed one count as ties (on both sides)


def binomial_above(successes: int, n: int, bound: float) -> c.Test:
    """The exact one-sided binomial test of "the success rate exceeds ``bound``" from
    ``successes`` of ``n`` independent trials; does not hold when it is significantly below.
    Value: the rate, error its binomial s.e.m., statistic the successes."""
    if n == 0:
        return c.Test("exact binomial", math.nan, math.nan, 0, math.nan, math.nan, math.nan,
                      c.NOT_RESOLVED)
    rate = successes / n
    p_up, p_down = c.binomial_tails(successes, n, bound)
    verdict = c.HOLDS if p_up < c.ALPHA else c.FAILS if p_down < c.ALPHA else c.NOT_RESOLVED
    return c.Test("exact binomial", rate, math.sqrt(rate * (1 - rate) / n), n,
                  float(successes), p_up, p_up, verdict)


def _centred(v: np.ndarray) -> np.ndarray:
    """``v`` centred and scaled to unit norm (Pearson r is the dot product of two of them)."""
    v = v - v.mean()
    return v / np.linalg.norm(v)


def mantel(a: np.ndarray, b: np.ndarray, permutations: int = PERMUTATIONS,
           seed: int = PERMUTATION_SEED) -> c.Test:
    """The Mantel test of "the symmetric path-path matrices ``a``, ``b``: (Pi, Pi) share their
    pattern": Pearson r of their upper triangles (diagonal included), its one-sided p against
    ``permutations`` joint relabellings of ``b``'s rows and columns (a relabelling keeps the
    diagonal on the diagonal, so the null keeps each matrix's structure); a Monte Carlo p, so
    ``p_exact`` is NaN. ``n``: the paths."""
    rng = np.random.default_rng(seed)
    perms = np.array([np.arange(len(b))] + [rng.permutation(len(b)) for _ in range(permutations)])
    i, j = np.triu_indices(len(a))
    x = _centred(a[i, j])
    ys = np.apply_along_axis(_centred, 1, b[perms[:, i], perms[:, j]])  # (1 + permutations, m)
    null = ys @ x
    r, null = float(null[0]), null[1:]  # the identity relabelling comes first
    p_up = float((1 + np.sum(null >= r - TIE)) / (1 + permutations))
    p_down = float((1 + np.sum(null <= r + TIE)) / (1 + permutations))
    verdict = c.HOLDS if p_up < c.ALPHA else c.FAILS if p_down < c.ALPHA else c.NOT_RESOLVED
    return c.Test("Mantel permutation", r, math.nan, len(a), r, p_up, math.nan, verdict)


def rank_correlation_above(x: np.ndarray, y: np.ndarray) -> c.Test:
    """Spearman's rho of "``y`` grows with ``x``", its exact one-sided p over every permutation
    of ``y`` (n! of them: n <= 10); not resolved with a non-finite value. Value and statistic:
    rho; n: the pairs."""
    n = len(x)
    if n < 3 or n > 10 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return c.Test("Spearman exact permutation", math.nan, math.nan, n, math.nan, math.nan,
                      math.nan, c.NOT_RESOLVED)
    x, y = c.twice_average_ranks(x), c.twice_average_ranks(y)  # rho ignores the factor 2
    ys = np.apply_along_axis(_centred, 1, np.array(list(itertools.permutations(y))))  # (n!, n)
    null = ys @ _centred(x)
    rho = float(null[0])  # the identity permutation comes first
    p_up, p_down = float(np.mean(null >= rho - TIE)), float(np.mean(null <= rho + TIE))
    verdict = c.HOLDS if p_up < c.ALPHA else c.FAILS if p_down < c.ALPHA else c.NOT_RESOLVED
    return c.Test("Spearman exact permutation", rho, math.nan, n, rho, p_up, p_up, verdict)


def _row(id: str, figure: str, statement: str, paper: str, test: c.Test, criterion: str,
         unit: str, kind: str = c.CLAIM) -> dict:
    return c.row(id, STUDY, figure, statement, paper, test, criterion, unit, kind)


def _correct(ep: pd.DataFrame, method: str, N: float | None = None) -> pd.Series:
    """Per test episode, 1 where ``method`` (at width ``N``) gets it right."""
    rows = ep[ep["method"] == method]
    if N is not None:
        rows = rows[np.isclose(rows["N"], N)]
    return rows.set_index("episode")["correct"]


def _aligned(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    return both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy()


def accuracy_claims(acc: pd.DataFrame, ep: pd.DataFrame) -> list[dict]:
    """Fig. 3b: the gradient-descent model solves the task; the theory beats the GP at the
    smallest width; the samples agree with the theory (paired TOST); the checks that the
    theory loses accuracy towards the largest width and equals the GP there (paired TOST)."""
    rows = []
    gd = acc[acc["method"] == "gradient descent"]
    if len(gd):
        n = int(gd["n_test"].iloc[0])
        rows.append(_row(
            "fig3.gradient_descent", "Fig. 3b", "The two-layer attention network trained by "
            "gradient descent solves one-shot Omniglot episodes", f"{PAPER_ACCURACY:.1%}",
            binomial_above(round(float(gd["test"].iloc[0]) * n), n, TARGET_ACCURACY.value),
            f"test accuracy > {TARGET_ACCURACY.value:g} (TARGET_ACCURACY; exact binomial over the "
            "test episodes)", EPISODE))
    theory = ep[ep["method"] == "theory"]
    if not len(theory):
        return rows
    small, large = float(theory["N"].min()), float(theory["N"].max())
    at_small = _correct(ep, "theory", small)
    if (ep["method"] == "gp").any():
        rows.append(_row(
            "fig3b.theory_above_gp", "Fig. 3b", "At small width the theory with the network's "
            "heads generalises better than the GP limit", "",
            c.paired_binary(*_aligned(at_small, _correct(ep, "gp"))),
            f"test accuracy theory (N = {small:g}, the grid's smallest) - GP > 0, paired per "
            "episode (McNemar exact on the discordant episodes)", EPISODE))
    margin = ACCURACY_MARGIN.value
    samples = ep[ep["method"] == "samples"]
    for width in sorted(samples["N"].unique()):
        a, b = _aligned(_correct(ep, "samples", width), _correct(ep, "theory", width))
        rows.append(_row(
            "fig3b.samples_on_theory", "Fig. 3b", "Posterior samples agree with the theory", "",
            c.paired_equivalent(a, b, margin), f"test accuracy samples - theory at N = {width:g}, "
            f"paired per episode, within +-{margin:g} (TOST; ACCURACY_MARGIN)", EPISODE))
    if large > small:
        at_large = _correct(ep, "theory", large)
        rows.append(_row(
            "fig3b.accuracy_falls_with_width", "Fig. 3b", "The theory's accuracy decreases as "
            "the width N grows, towards the GP limit (the action's entropy term grows with N)",
            "", c.paired_binary(*_aligned(at_small, at_large)),
            f"test accuracy theory at N = {small:g} minus at N = {large:g} (the grid's smallest "
            "and largest) > 0, paired per episode (McNemar exact)", EPISODE, c.CHECK))
        if (ep["method"] == "gp").any():
            rows.append(_row(
                "fig3b.large_width_is_gp", "Fig. 3b", "At large width the theory's accuracy is "
                "the GP limit's (the action's GP limit)", "",
                c.paired_equivalent(*_aligned(at_large, _correct(ep, "gp")), margin),
                f"test accuracy theory (N = {large:g}, the grid's largest) - GP, paired per "
                f"episode, within +-{margin:g} (TOST; ACCURACY_MARGIN)", EPISODE, c.CHECK))
    return rows


def _matrix(ops: pd.DataFrame, source: str) -> np.ndarray:
    """The order parameter of ``source`` as a (Pi, Pi) array in the table's path order."""
    labels = list(dict.fromkeys(ops["row"]))
    U = ops[ops["source"] == source].pivot(index="row", columns="col", values="value")
    return U.loc[labels, labels].to_numpy(float)


def order_parameter_claims(ops: pd.DataFrame) -> list[dict]:
    """Fig. 3c: the sampled U and the gradient-descent model's path overlaps share the pattern
    of the theory's U at the scoring width (Mantel tests; the overlaps have their own scale)."""
    sources = list(dict.fromkeys(ops["source"]))
    theory = [s for s in sources if s.startswith("theory")]
    if not theory:
        return []
    U = _matrix(ops, theory[0])
    rows = []
    for source, id, statement in (
            ("samples", "fig3c.samples_pattern", "The sampled order parameter U has the "
             "theory's pattern of path weights"),
            ("gradient descent", "fig3c.gradient_descent_pattern", "The overlaps of the "
             "gradient-descent model's effective path weights have the theory's pattern")):
        match = [s for s in sources if s.startswith(source)]
        if match:
            rows.append(_row(
                id, "Fig. 3c", statement, "", mantel(U, _matrix(ops, match[0])),
                f"Pearson r of the upper triangles of U ({theory[0]}) and {match[0]} > 0 "
                f"(Mantel test, {PERMUTATIONS} joint relabellings of the paths, seed "
                f"{PERMUTATION_SEED})", PATH))
    return rows


def pc_claims(pcs: pd.DataFrame) -> list[dict]:
    """Fig. 3d: the labels lie more in the span of the finite-width kernel's leading PCs than in
    the GP kernel's (``label_share`` over every PC the table holds, a location fixed by the
    config's ``n_pcs``, the paper's panel's 50; one training set, one theory: a deterministic
    comparison)."""
    share = label_share(pcs, ("regime",))
    if not {"fw", "gp"} <= set(share.index):
        return []
    gap = float(share["fw"] - share["gp"])
    top = int(pcs["rank"].max())
    return [_row(
        "fig3d.pc_alignment", "Fig. 3d", "At finite width the kernel's leading principal "
        "components align with the task labels better than in the GP limit", "",
        c.exact(gap, gap > 0), f"sum of (v_k . Y)^2 / P over the top {top} PCs of the training "
        "kernel (the share of the labels in their span), theory at the scoring width minus the "
        "GP limit, > 0 (one training set and one theory: no sampling unit)", THEORY)]


def pruning_claims(scores: pd.DataFrame, cumulative: pd.DataFrame) -> list[dict]:
    """Fig. 3e: a head's score predicts the accuracy its pruning costs; Fig. 3f: pruning in
    ascending score order keeps more accuracy than random orders."""
    rows = [_row(
        "fig3e.score_predicts_cost", "Fig. 3e", "Heads with a low score cost little accuracy "
        "when pruned (score and cost rank-correlated)", "",
        rank_correlation_above(scores["score"].to_numpy(), scores["drop"].to_numpy()),
        "Spearman rho of head score and single-head pruning cost > 0 (exact permutation p over "
        "the heads)", HEAD)]
    ascending = cumulative[cumulative["order"] == "ascending"].set_index("removed")["accuracy"]
    random = cumulative[cumulative["order"] == "random"].pivot(
        index="replicate", columns="removed", values="accuracy")
    if len(ascending) > 1 and len(random):
        removals = [k for k in ascending.index if k > 0 and k in random.columns]
        excess = (ascending[removals] - random[removals]).mean(axis=1)
        rows.append(_row(
            "fig3f.score_order_pruning", "Fig. 3f", "Pruning heads in ascending score order "
            "keeps more accuracy than random orders", "", c.greater(excess),
            f"per random order, test accuracy in score order minus in that order, mean over the "
            f"{len(removals)} removals, > 0 (the score order's curve is one, the random orders "
            "its reference)", ORDER))
    return rows


def omniglot_claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables`` but the claims
    table)."""
    return c.table([*accuracy_claims(tables["accuracy"], tables["episodes"]),
                    *order_parameter_claims(tables["order_parameters"]),
                    *pc_claims(tables["pc_overlaps"]),
                    *pruning_claims(tables["head_scores"], tables["cumulative_pruning"])])
