"""Claims of the papers and the pre-registered tests that give them a verdict.

A claims table has one row per claim (``COLUMNS``). Two kinds of rows are kept apart: ``claim``,
a statement of a paper, and ``check``, a property of the project's protocol (data at their target,
distinct, held out). Each row names its test, the unit the test counts (realisation, episode,
family), the measured value with its standard error and ``n``, the test's statistic, its
one-sided p-value and, beside the t-tests, the exact signed-rank p (``p_exact``), the criterion in
words and the verdict: ``holds``, ``not resolved`` or ``does not hold``.

Every test is fixed before the data are seen: the contrast, its direction and the location it is
taken at come from the claim (or from training data alone), never from the quantity tested.
At level ``ALPHA`` (one-sided):

- ``greater`` / ``less``: paired per-unit contrasts against a bound, one-sided t, with the exact
  sign-flip p of their ranks beside it (``signed_rank_p``); from ``EXACT_FROM`` units on, where
  the exact test can reach ``ALPHA``, both must agree. The claim holds when its side is
  significant, does not hold when the opposite side is, and is not resolved otherwise.
- ``equivalent``: two one-sided tests (TOST) for "equal within ±δ"; does not hold when the mean
  lies significantly outside.
- ``correlation_above`` / ``correlation_gap``: correlations on the Fisher-z scale.
- ``paired_binary``: paired successes of two methods on the same episodes, the exact binomial
  test of the discordant pairs (McNemar).
- ``every``: a protocol check, each unit passes or fails; it holds when every unit passes.
- ``all_of``: an intersection-union test ("a rise and a fall", "better than every a"): it holds
  when every part holds, without a correction; its p is the largest of theirs.
- ``exact``: a deterministic value (a theory curve, a count) and whether it meets its criterion.

Studies' own tests take their p-values from ``t_tails`` and ``binomial_tails``.

Every threshold is a ``Criterion`` with its reason (what it protects against, where its value
comes from); ``criteria`` lists a claims module's, and the docs' criteria table is generated from
them. A claim may name the checks that gate it (``row(..., gates=...)``): when one of them does
not hold, ``table`` turns the claim's verdict to ``not resolved`` and names the check in
``gated_by`` (a claim on data that fail their protocol is not evidence either way).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from types import ModuleType

import numpy as np
import pandas as pd
from scipy import special

HOLDS, NOT_RESOLVED, FAILS = "holds", "not resolved", "does not hold"
VERDICTS = (HOLDS, NOT_RESOLVED, FAILS)
CLAIM, CHECK = "claim", "check"
ALPHA = 0.05  # one-sided level of every test
DIGITS = 6  # a recomputed claims table agrees with the written one to this many significant
# digits: summation order (BLAS, processor) moves the last digits of a float64 polyfit
EXACT_FROM = 5  # from this n on, the exact signed-rank p can reach ALPHA (1/32) and must agree
COLUMNS = ("id", "kind", "study", "figure", "statement", "paper", "measured", "error", "n", "unit",
           "test", "statistic", "p", "p_exact", "criterion", "verdict", "gates", "gated_by")

Values = Sequence[float] | np.ndarray | pd.Series


@dataclass(frozen=True)
class Criterion:
    """A threshold of a study's claims or checks with its reason: ``value`` (what the tests
    use: a number or a range), ``protects`` (what a test at this value guards against) and
    ``source`` (the paper's sentence, a theory, or a measured noise level with the command that
    measured it)."""

    name: str
    value: float | tuple[float, float]
    protects: str
    source: str


def criteria(module: ModuleType) -> list[Criterion]:
    """Every ``Criterion`` a claims module defines at its top level, in definition order."""
    return [v for v in vars(module).values() if isinstance(v, Criterion)]


@dataclass(frozen=True)
class Test:
    """The outcome of one test: its name, the estimate (``value``, ``error`` its standard error
    or NaN) over ``n`` units, the test statistic, the one-sided p of the claim's side, the exact
    p beside it (NaN where none) and the verdict."""

    name: str
    value: float
    error: float
    n: int
    statistic: float
    p: float
    p_exact: float
    verdict: str


def _finite(values: Values) -> np.ndarray:
    x = np.asarray(values, float)
    return x[np.isfinite(x)]


def signed_rank_p(x: Values) -> float:
    """Exact one-sided p of "the values are centred above 0" by flipping signs: the ranks of
    ``|x|`` (ties averaged, zeros dropped) summed over the positive values, against all 2^n sign
    assignments (a dynamic programme over half-ranks, exact for any n)."""
    x = _finite(x)
    x = x[x != 0]
    n = len(x)
    if n == 0:
        return 1.0
    half = twice_average_ranks(np.abs(x))
    counts = _sign_flip_counts(tuple(sorted(half.tolist())))
    observed = int(half[x > 0].sum())
    return float(counts[observed:].sum() / counts.sum())


def twice_average_ranks(a: np.ndarray) -> np.ndarray:
    """Twice the ranks (1-based, ties given their average) of the finite values of ``a: (n,)``,
    as integers: ``2 * scipy.stats.rankdata(a)``, exactly (a tie group over sorted positions
    ``first .. last``, 0-based, has twice its average rank ``first + last + 2``)."""
    order = np.argsort(a, kind="stable")
    ordered = a[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))  # a tie group starts
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(a)) - 1
    twice = np.empty(len(a), int)
    twice[order] = (starts + ends + 2)[np.cumsum(first) - 1]
    return twice


@functools.lru_cache(maxsize=1024)
def _sign_flip_counts(half: tuple[int, ...]) -> np.ndarray:
    """The number of the 2^n sign assignments of the half-ranks ``half`` (sorted) whose positive
    ones sum to each total ``0 .. sum(half)``: ``(sum(half) + 1,)``, read-only (cached: the
    calibration draws the same ranks many times). Integer counts, exact in float64 for n < 53,
    so the order of the additions does not change them."""
    counts = np.zeros(sum(half) + 1)
    counts[0] = 1.0
    for h in half:
        counts[h:] += counts[:-h].copy()
    counts.flags.writeable = False
    return counts


def _t_one_sided(x: np.ndarray) -> tuple[float, float, float]:
    """(mean, s.e.m., t) of ``x`` (``x`` has n >= 2); t is ±inf for a constant non-zero x."""
    mean = float(x.mean())
    sem = float(x.std(ddof=1) / np.sqrt(len(x)))
    if sem == 0:
        return mean, 0.0, math.copysign(math.inf, mean) if mean else 0.0
    return mean, sem, mean / sem


def t_tails(t: float, df: int) -> tuple[float, float]:
    """(p of "above", p of "below") of Student's t statistic ``t`` with ``df`` degrees of
    freedom: its upper and lower tails, as ``scipy.stats.t`` computes them."""
    return float(special.stdtr(df, -t)), float(special.stdtr(df, t))


def binomial_tails(k: int, n: int, p: float) -> tuple[float, float]:
    """(P(X >= k), P(X <= k)) of X ~ binomial(``n``, ``p``), as ``scipy.stats.binom`` computes
    them (its own survival function, not ``scipy.special.bdtrc``: they differ in the last
    digits)."""
    from scipy import stats  # here: importing it takes a second, which most jobs never use

    return float(stats.binom.sf(k - 1, n, p)), float(stats.binom.cdf(k, n, p))


def _t_sides(x: np.ndarray, bound: float) -> tuple[float, float, float, float, float]:
    """(mean of ``x - bound``, s.e.m., t, p of "above the bound", p of "below the bound")."""
    mean, sem, t = _t_one_sided(x - bound)
    return mean, sem, t, *t_tails(t, len(x) - 1)


def _side(p: float, shifted: np.ndarray) -> bool:
    """One side is significant: its t p below ALPHA, and from ``EXACT_FROM`` units on the exact
    signed-rank p of ``shifted`` (the values minus the bound, signed towards that side) too; the
    exact p is computed only when the t p leaves it to decide."""
    return p < ALPHA and (len(shifted) < EXACT_FROM or signed_rank_p(shifted) <= ALPHA)


def greater(values: Values, bound: float = 0.0) -> Test:
    """One-sided test of "the mean of the per-unit ``values`` exceeds ``bound``" (paired units:
    pass the per-unit contrasts). Value and error: the mean and its s.e.m."""
    x = _finite(values)
    n = len(x)
    if n < 2:
        value = float(x[0]) if n else math.nan
        return Test("one-sided t", value, math.nan, n, math.nan, math.nan, math.nan, NOT_RESOLVED)
    mean, sem, t, p_up, p_down = _t_sides(x, bound)
    e_up = signed_rank_p(x - bound)
    verdict = (HOLDS if p_up < ALPHA and (n < EXACT_FROM or e_up <= ALPHA)
               else FAILS if _side(p_down, bound - x) else NOT_RESOLVED)
    return Test("one-sided t", mean + bound, sem, n, t, p_up, e_up, verdict)


def less(values: Values, bound: float = 0.0) -> Test:
    """One-sided test of "the mean of ``values`` is below ``bound``"."""
    up = greater(-_finite(values), -bound)
    return Test(up.name, -up.value, up.error, up.n, -up.statistic, up.p, up.p_exact, up.verdict)


def equivalent(values: Values, delta: float) -> Test:
    """Two one-sided t-tests (TOST) of "the mean of ``values`` lies within ±``delta``": p is the
    larger of the two; does not hold when the mean lies significantly beyond ±delta."""
    x = _finite(values)
    n = len(x)
    if n < 2:
        value = float(x[0]) if n else math.nan
        return Test("TOST", value, math.nan, n, math.nan, math.nan, math.nan, NOT_RESOLVED)
    _, sem_low, t_low, above_low, below_low = _t_sides(x, -delta)
    _, sem_high, t_high, above_high, below_high = _t_sides(-x, -delta)
    p = max(above_low, above_high)  # above -delta, and -x above -delta: x below +delta
    if p < ALPHA:
        verdict = HOLDS
    elif _side(below_low, -delta - x) or _side(below_high, x - delta):
        verdict = FAILS  # significantly below -delta or above +delta
    else:
        verdict = NOT_RESOLVED
    sem, statistic = (sem_low, t_low) if above_low >= above_high else (sem_high, -t_high)
    return Test("TOST", float(x.mean()), sem, n, statistic, p, math.nan, verdict)


def every_within(deviations: Values, sems: Values, counts: Values, margin: float) -> Test:
    """Per unit a mean deviation with its s.e.m. and the number of draws it averages (e.g. a
    simulated point's relative distance from a theory, over its simulation realisations): two
    one-sided t-tests (df = count - 1) of "its true deviation lies within ±``margin``", joined by
    the intersection-union test. Holds when every unit's holds; does not hold when some unit lies
    significantly beyond ±margin, at ALPHA / k for k units (Bonferroni: without it, k units all
    at the margin would fail the claim with probability 1 - 0.95^k); not resolved otherwise, and
    at most not resolved when a unit cannot be tested (a deviation or s.e.m. not a number, or
    fewer than two draws). Value, error and statistic are the binding unit's (the largest p);
    n counts every unit."""
    d, s, k = (np.asarray(v, float).ravel() for v in (deviations, sems, counts))
    ok = np.isfinite(d) & np.isfinite(s) & (s >= 0) & (k >= 2)
    units = len(d)
    d, s, k = d[ok], s[ok], k[ok]
    if not len(d):
        return Test("intersection-union of TOST per unit", math.nan, math.nan, units, math.nan,
                    math.nan, math.nan, NOT_RESOLVED)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = np.minimum(d + margin, margin - d) / s  # t of the nearer bound, inward
        beyond = (np.abs(d) - margin) / s                # t of the farther side, outward
    inside = np.where(s > 0, inside, np.where(np.abs(d) < margin, math.inf, -math.inf))
    beyond = np.where(s > 0, beyond, np.where(np.abs(d) > margin, math.inf, -math.inf))
    p = special.stdtr(k - 1, -inside)            # p of "within the margin", per unit
    p_beyond = special.stdtr(k - 1, -beyond)     # p of "beyond it", per unit
    verdict = (FAILS if (p_beyond < ALPHA / units).any()
               else HOLDS if (p < ALPHA).all() and ok.all() else NOT_RESOLVED)
    b = int(np.argmax(p))
    return Test("intersection-union of TOST per unit", float(d[b]), float(s[b]), units,
                float(inside[b]), float(p[b]), math.nan, verdict)


def _fisher(r: Values) -> np.ndarray:
    return np.arctanh(np.clip(_finite(r), -1 + 1e-12, 1 - 1e-12))


def correlation_above(r: Values, bound: float) -> Test:
    """One-sided t on the Fisher-z scale of "the per-unit correlations exceed ``bound``"; the
    value is the back-transformed mean z, the error the s.e.m. of z carried to that scale
    (``(1 - r^2)`` times it, the derivative of tanh)."""
    z = greater(_fisher(r), float(np.arctanh(bound)))
    r_mean = float(np.tanh(z.value))
    return Test("one-sided t on Fisher z", r_mean, (1 - r_mean ** 2) * z.error, z.n,
                z.statistic, z.p, z.p_exact, z.verdict)


def correlation_gap(r_high: Values, r_low: Values) -> Test:
    """Paired one-sided t on the Fisher-z scale of "``r_high`` exceeds ``r_low``" (aligned per
    unit); the value is the mean difference of z."""
    z = greater(_fisher(r_high) - _fisher(r_low), 0.0)
    return Test("paired one-sided t on Fisher z", z.value, z.error, z.n, z.statistic, z.p,
                z.p_exact, z.verdict)


def paired_binary(a: Values, b: Values) -> Test:
    """McNemar's exact test of "method a succeeds more often than method b" on the same
    episodes (``a``, ``b``: 0/1 per episode): the discordant episodes are binomial(1/2) under
    no difference. Value: the difference of success rates; statistic: the episodes a alone
    gets right."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    n = len(a)
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    discordant = only_a + only_b
    diff = (only_a - only_b) / n if n else math.nan
    error = math.sqrt(discordant - (only_a - only_b) ** 2 / n) / n if n else math.nan
    if discordant == 0:
        return Test("McNemar exact", diff, error, n, 0.0, 1.0, math.nan, NOT_RESOLVED)
    p_up, p_down = (binomial_tails(k, discordant, 0.5)[0] for k in (only_a, only_b))
    verdict = HOLDS if p_up < ALPHA else FAILS if p_down < ALPHA else NOT_RESOLVED
    return Test("McNemar exact", diff, error, n, float(only_a), p_up, math.nan, verdict)


def every(passes: Values, values: Values | None = None) -> Test:
    """A protocol check: every unit passes (``passes``: 0/1 per unit). The value is the mean of
    ``values`` (the per-unit measurements) or the fraction passing; the statistic the number of
    units passing."""
    ok = np.asarray(passes, bool)
    n = len(ok)
    value = float(np.mean(_finite(values))) if values is not None and n else (
        float(ok.mean()) if n else math.nan)
    verdict = NOT_RESOLVED if n == 0 else HOLDS if ok.all() else FAILS
    return Test("every unit", value, math.nan, n, float(ok.sum()), math.nan, math.nan, verdict)


def all_of(*tests: Test) -> Test:
    """The intersection-union test of a conjunction: it holds when every part holds, does not
    hold when some part does not, with no correction; value, error and statistic are those of
    the part with the largest p (the binding one), n the smallest."""
    verdicts = [t.verdict for t in tests]
    verdict = FAILS if FAILS in verdicts else HOLDS if all(v == HOLDS for v in verdicts) else (
        NOT_RESOLVED)
    ps = [t.p if np.isfinite(t.p) else math.inf for t in tests]
    binding = tests[int(np.argmax(ps))]
    exact_ps = [t.p_exact for t in tests if np.isfinite(t.p_exact)]
    return Test(f"intersection-union of {len(tests)} x {binding.name}", binding.value,
                binding.error, min(t.n for t in tests), binding.statistic, binding.p,
                max(exact_ps) if exact_ps else math.nan, verdict)


def exact(value: float, ok: bool, n: int = 1) -> Test:
    """A deterministic value (a theory curve, a count) and whether it meets its criterion."""
    return Test("exact (deterministic)", float(value), 0.0, n, math.nan, math.nan, math.nan,
                HOLDS if ok else FAILS)


@dataclass(frozen=True)
class Claim:
    """One row of a claims table (``COLUMNS``)."""

    id: str
    kind: str
    study: str
    figure: str
    statement: str
    paper: str
    measured: float
    error: float
    n: int
    unit: str
    test: str
    statistic: float
    p: float
    p_exact: float
    criterion: str
    verdict: str
    gates: str
    gated_by: str


def row(id: str, study: str, figure: str, statement: str, paper: str, test: Test,
        criterion: str, unit: str, kind: str = CLAIM, gates: Sequence[str] = ()) -> dict:
    """One row of a claims table: a paper's ``claim`` or a protocol ``check``; ``gates``: the
    ids of the checks whose failure leaves the claim not resolved (``table`` applies them)."""
    if test.verdict not in VERDICTS:
        raise ValueError(f"claim {id}: unknown verdict {test.verdict!r}")
    if kind not in (CLAIM, CHECK):
        raise ValueError(f"claim {id}: kind {kind!r} is neither {CLAIM!r} nor {CHECK!r}")
    return asdict(Claim(id, kind, study, figure, statement, paper, test.value, test.error,
                        test.n, unit, test.name, test.statistic, test.p, test.p_exact,
                        criterion, test.verdict, ";".join(gates), ""))


def _gate(rows: list[dict]) -> list[dict]:
    """``rows`` with every claim whose gating checks do not all hold turned ``not resolved``,
    the failing checks (or missing ones, "id (absent)") named in ``gated_by``."""
    verdicts = {r["id"]: r["verdict"] for r in rows if r["kind"] == CHECK}
    out = []
    for r in rows:
        failing = [g if g in verdicts else f"{g} (absent)"
                   for g in filter(None, r["gates"].split(";")) if verdicts.get(g) != HOLDS]
        out.append({**r, "gated_by": ";".join(failing),
                    "verdict": NOT_RESOLVED if failing else r["verdict"]})
    return out


def table(rows: list[dict]) -> pd.DataFrame:
    """The claims table of ``rows`` with their gates applied (``_gate``), the papers' claims
    first, then the protocol checks."""
    df = pd.DataFrame(_gate(rows), columns=list(COLUMNS))
    order = df["kind"].map({CLAIM: 0, CHECK: 1})
    return df.iloc[np.argsort(order.to_numpy(), kind="stable")].reset_index(drop=True)


def rounded(claims: pd.DataFrame, digits: int = DIGITS) -> pd.DataFrame:
    """``claims`` with every number rounded to ``digits`` significant digits (text unchanged),
    the form in which two computations of a table are compared."""
    out = claims.copy()
    for col in out.columns[out.dtypes.map(pd.api.types.is_float_dtype)]:
        out[col] = [float(f"{v:.{digits}g}") if np.isfinite(v) else v for v in out[col]]
    return out


def plural(unit: str) -> str:
    """The plural of a unit of a claims table: its noun (the last word before any parenthesis)
    made plural, ``family`` -> ``families``, ``theory solve`` -> ``theory solves``, ``theory
    (deterministic)`` -> ``theories (deterministic)``."""
    head, paren, rest = unit.partition(" (")
    if head.endswith("y") and head[-2:-1] not in ("", *"aeiou"):
        head = head[:-1] + "ies"
    elif head.endswith(("s", "x", "z", "ch", "sh")):
        head += "es"
    else:
        head += "s"
    return head + paren + rest


def counted(n: int, unit: str) -> str:
    """``n`` units in words: ``1 realisation``, ``3 realisations``, ``0 families``."""
    return f"{n} {unit if n == 1 else plural(unit)}"


def log_claims(claims: pd.DataFrame, log: logging.Logger) -> None:
    """One line per row: id, measured value with its error and n, test and p, verdict; a
    warning for a claim or check that does not hold."""
    for _, r in claims.iterrows():
        level = logging.WARNING if r["verdict"] == FAILS else logging.INFO
        log.log(level, "%s %s: %.4g +- %.2g (n = %s; %s, p = %.3g): %s", r["kind"], r["id"],
                r["measured"], r["error"], counted(int(r["n"]), r["unit"]), r["test"], r["p"],
                r["verdict"].upper())


def paired_equivalent(a: np.ndarray, b: np.ndarray, delta: float) -> Test:
    """Two one-sided t-tests (TOST) of "the success rates of methods a and b on the same
    episodes (``a``, ``b``: 0/1 per episode) differ by less than ±``delta``", on the per-episode
    differences; does not hold when the difference lies significantly beyond ±delta. With the
    thousands of episodes of a test set the t-distribution of a mean of bounded differences is
    accurate, so "beyond ±delta" is the t's alone: ``equivalent`` also asks the exact
    signed-rank p there, whose cost grows as n^3."""
    d = np.asarray(a, float) - np.asarray(b, float)
    n = len(d)
    if n < 2:
        return Test("TOST paired", float(d.mean()) if n else math.nan, math.nan, n, math.nan,
                      math.nan, math.nan, NOT_RESOLVED)
    mean, sem = float(d.mean()), float(d.std(ddof=1) / math.sqrt(n))
    if sem == 0:
        inside = abs(mean) < delta
        return Test("TOST paired", mean, 0.0, n, math.nan, 0.0 if inside else 1.0, math.nan,
                      HOLDS if inside else FAILS)
    t_low, t_high = (mean + delta) / sem, (mean - delta) / sem
    (p_low, below_low), (above_high, p_high) = t_tails(t_low, n - 1), t_tails(t_high, n - 1)
    p, binding = max(p_low, p_high), t_low if p_low >= p_high else t_high
    outside = below_low < ALPHA or above_high < ALPHA
    verdict = HOLDS if p < ALPHA else FAILS if outside else NOT_RESOLVED
    return Test("TOST paired", mean, sem, n, binding, p, math.nan, verdict)
