"""Claims of the papers and the verdicts the statistics give them.

A claims table has one row per claim (``COLUMNS``): its id, study, figure, the paper's
statement, the paper's number where it gives one, the measured value, its error (the standard
error of the mean over ``n`` independent units: realisations, episodes or fitted points), ``n``,
the criterion in words and the verdict: ``holds``, ``not resolved`` or ``does not hold``.

Verdicts are two-sided t-intervals at 95 % (``LEVEL``) around the measured value: a claim holds
when the whole interval satisfies its criterion, does not hold when none of it does, and is not
resolved otherwise, or when the value has no error bar from fewer than two units. A value picked
as the best of ``tests`` candidates (the largest rise of a curve, say) gets a Bonferroni-widened
interval. A value without sampling error (a count, a theory curve) is compared as it is; a χ² gets
its p-value.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

HOLDS, NOT_RESOLVED, FAILS = "holds", "not resolved", "does not hold"
VERDICTS = (HOLDS, NOT_RESOLVED, FAILS)
LEVEL = 0.95
COLUMNS = ("id", "study", "figure", "statement", "paper", "measured", "error", "n", "criterion",
           "verdict")


@dataclass(frozen=True)
class Measure:
    """A measured value, its standard error, the number of independent units behind it, and the
    number of candidates it was picked from (``tests``: 1 when it was fixed in advance). An
    error of exactly 0 marks a value without sampling error."""

    value: float
    error: float
    n: int
    tests: int = 1

    def half_width(self) -> float:
        """Half the t-interval at ``LEVEL`` (Bonferroni over ``tests``); 0 for an exact value,
        infinite without an error bar (n < 2 or NaN)."""
        if self.error == 0 and self.n >= 1:
            return 0.0
        if self.n < 2 or not np.isfinite(self.error):
            return math.inf
        alpha = (1 - LEVEL) / self.tests
        return float(stats.t.ppf(1 - alpha / 2, self.n - 1) * self.error)


def mean_sem(values: Sequence[float] | np.ndarray | pd.Series) -> Measure:
    """Mean, standard error of the mean and count of ``values`` (NaNs dropped)."""
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return Measure(math.nan, math.nan, 0)
    sem = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else math.nan
    return Measure(float(x.mean()), sem, len(x))


def exact(value: float, n: int = 1) -> Measure:
    """A value without sampling error (a count, or a deterministic computation) from ``n``
    units."""
    return Measure(float(value), 0.0, n)


def above(m: Measure, bound: float) -> str:
    """Verdict on ``value > bound``."""
    if not np.isfinite(m.value):
        return NOT_RESOLVED
    h = m.half_width()
    if m.value - h > bound:
        return HOLDS
    if m.value + h < bound:
        return FAILS
    return NOT_RESOLVED


def below(m: Measure, bound: float) -> str:
    """Verdict on ``value < bound``."""
    return above(Measure(-m.value, m.error, m.n, m.tests), -bound)


def within(m: Measure, tolerance: float) -> str:
    """Verdict on ``|value| <= tolerance``."""
    if not np.isfinite(m.value):
        return NOT_RESOLVED
    h = m.half_width()
    if abs(m.value) + h <= tolerance:
        return HOLDS
    if abs(m.value) - h > tolerance:
        return FAILS
    return NOT_RESOLVED


def consistent(chi2: float, dof: int, p_min: float = 1 - LEVEL) -> str:
    """Verdict on "the points scatter around the curve as their error bars say": the χ² of
    ``dof`` independent standardised residuals has a p-value of at least ``p_min``."""
    if dof < 1 or not np.isfinite(chi2):
        return NOT_RESOLVED
    return HOLDS if stats.chi2.sf(chi2, dof) >= p_min else FAILS


def both(*verdicts: str) -> str:
    """The verdict on a conjunction: fails if any part fails, holds if all hold."""
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else NOT_RESOLVED


@dataclass(frozen=True)
class Claim:
    """One row of a claims table (``COLUMNS``)."""

    id: str
    study: str
    figure: str
    statement: str
    paper: str
    measured: float
    error: float
    n: int
    criterion: str
    verdict: str


def row(id: str, study: str, figure: str, statement: str, paper: str, m: Measure,
        criterion: str, verdict: str) -> dict:
    """One row of a claims table."""
    if verdict not in VERDICTS:
        raise ValueError(f"claim {id}: unknown verdict {verdict!r}")
    return asdict(Claim(id, study, figure, statement, paper, m.value, m.error, m.n, criterion,
                        verdict))


def table(rows: list[dict]) -> pd.DataFrame:
    """The claims table of ``rows`` with the columns in ``COLUMNS`` order."""
    return pd.DataFrame(rows, columns=list(COLUMNS))


def log_claims(claims: pd.DataFrame, log: logging.Logger) -> None:
    """One line per claim: id, measured value with its error and n, verdict; a warning for a
    claim that does not hold."""
    for _, r in claims.iterrows():
        level = logging.WARNING if r["verdict"] == FAILS else logging.INFO
        log.log(level, "%s: %.4g +- %.2g (n = %d; %s): %s", r["id"], r["measured"], r["error"],
                r["n"], r["criterion"], r["verdict"].upper())
