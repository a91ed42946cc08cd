"""Calibration of the claims tests (``workflow_lib.claims.statistics``): how often each kind of test
says "holds" on synthetic per-unit tables drawn with no effect (its size, at most the nominal
``claims.ALPHA``) and with an effect of stated size (its power), at n = 3, 8 and 30 units.

Each kind draws ``reps`` tables of ``n`` units from a fixed seed, so the table is the same on
every run; ``python -m workflow_lib docs`` writes it into ``docs/pipeline.md`` from
``docs/calibration.csv`` (``pages.stored_power_table``: the table with the digest of the code
that computed it, computed again when that code changes). The kinds after
the generic ones are the attention-paths rows' forms at the effects the committed quick snapshot
shows (``docs/results/quick/*-claims.csv``), in units of the row's margin.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workflow_lib.claims import statistics as c

SIZES = (3, 8, 30)
REPS = 2000
SEED = 20240223

Draw = Callable[[np.random.Generator, int, bool], c.Test]


@dataclass(frozen=True)
class Kind:
    """A kind of test: its name, the effect it is powered against in words, and ``draw(rng, n,
    effect)``: one synthetic table of ``n`` units, tested (``effect`` False: at the null's edge,
    where "holds" is an error)."""

    name: str
    effect: str
    draw: Draw
    every_unit: bool = False
    """The claim is about every unit (each must show it: an intersection-union over the units),
    so that each unit added makes it stronger and its power falls as units are added."""


def _greater(d: float, rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Normal units of s.d. 1 around ``d`` (effect) or 0."""
    return c.greater(rng.normal(d if effect else 0.0, 1.0, n))


def _heavy(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    return c.greater(rng.standard_t(2, n) + (1.0 if effect else 0.0))


def _equivalent(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    return c.equivalent(rng.normal(0.0 if effect else 1.0, 0.5, n), 1.0)


def _fisher(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    z = rng.normal(np.arctanh(0.95) + (0.2 if effect else 0.0), 0.2, n)
    return c.correlation_above(np.tanh(z), 0.95)


def _mcnemar(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Paired episodes: both right with probability 0.5, neither 0.1, a alone 0.3 (effect) or
    0.2, b alone 0.1 or 0.2; ``10 n`` episodes."""
    only_a = 0.3 if effect else 0.2
    outcome = rng.choice(4, 10 * n, p=[0.5, only_a, 0.4 - only_a, 0.1])
    return c.paired_binary(outcome < 2, (outcome == 0) | (outcome == 2))


def _iut(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """A peak: a rise and a fall; without effect, the fall is absent (the least favourable
    null: the rise is large)."""
    rise = rng.normal(3.0, 1.0, n)
    return c.all_of(c.greater(rise), c.greater(rng.normal(1.0 if effect else 0.0, 1.0, n)))


def _log_ratio(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Fig. 3 right's edge test: per realisation the log of a loss ratio, normal with the
    spread of the quick identity snapshot's (s.d. 0.22) and, with the effect, its mean (0.53)."""
    return c.greater(rng.normal(0.53 if effect else 0.0, 0.22, n))


def _points(rng: np.random.Generator, n: int, effect: bool) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points' true relative deviations from the theory and their relative s.e.m.s: with
    the effect, the theory exact and each s.e.m. drawn as the quick snapshot's (lognormal, log
    mean -4.65, log s.d. 0.65: a median of 0.0096, up to 0.04 near the peak); without it the
    least favourable null of an intersection: one point at the margin 0.05 with such an s.e.m.,
    the others exact and certain (s.e.m. 1e-9), so that only that point can err."""
    sem = rng.lognormal(-4.65, 0.65, n)
    truth = np.zeros(n)
    if not effect:
        truth[0], sem[1:] = 0.05, 1e-9
    return truth, sem


def _theory(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Fig. 3 left's match (``_points``), each point's mean of 30 normal simulation draws."""
    truth, sem = _points(rng, n, effect)
    return c.every_within(truth + sem * rng.standard_t(29, n), sem, np.full(n, 30), 0.05)


def _theory_skewed(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """As ``_theory``, each point's mean and s.e.m. computed from 30 skewed draws (gamma, shape
    4: skewness 1, as the simulated test errors near the peak), relative to the theory."""
    truth, sem = _points(rng, n, effect)
    shape = 4.0
    sd = sem * math.sqrt(30)  # the draws' relative s.d.
    draws = rng.gamma(shape, (sd / math.sqrt(shape))[:, None], (n, 30))
    draws = draws - (sd * math.sqrt(shape))[:, None] + (1.0 + truth)[:, None]
    mean, err = draws.mean(axis=1) - 1.0, draws.std(axis=1, ddof=1) / math.sqrt(30)
    return c.every_within(mean, err, np.full(n, 30), 0.05)


def _peak(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Fig. 3 right's location: a rise, a fall and a rise beyond alpha = 1, log ratios with the
    quick identity snapshot's means and spreads (1.95, 3.45, 1.45; s.d. 0.25, 0.41, 0.21), and
    the log of the capacity edge's alpha with its (0.63, s.d. 0.51), that last at 0 (the edge at
    alpha = 1) without the effect."""
    parts = [rng.normal(1.95, 0.25, n), rng.normal(3.45, 0.41, n), rng.normal(1.45, 0.21, n),
             rng.normal(0.63 if effect else 0.0, 0.51, n)]
    return c.all_of(*(c.greater(x) for x in parts))


def _non_inferior(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Non-inferiority within a margin of 1 (``attention_hmm`` ``theory_reaches_good_denoising``:
    0.008, s.d. 0.008 per realisation, margin 0.02): units of s.d. 0.4 around 0.4 (effect) or
    -1, the margin (null)."""
    return c.greater(rng.normal(0.4 if effect else -1.0, 0.4, n), -1.0)


def _tost_large_width(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """TOST within +-1 (``attention_hmm`` ``large_width_is_gp``: 0.008, s.d. 0.007 per
    realisation, margin 0.02): units of s.d. 0.33 around 0.42 (effect) or 1, the margin
    (null)."""
    return c.equivalent(rng.normal(0.42 if effect else 1.0, 0.33, n), 1.0)


def _tost_episodes(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """``statistics.paired_equivalent`` within +-0.02 on ``500 n`` episodes (``omniglot``
    ``samples_on_theory``: samples alone right on 1.6 % of the episodes, theory alone on 2.0 %):
    the same discordance, 1.6 % vs 2.0 % (effect) or 2.8 % vs 0.8 % (null: a difference of 0.02,
    the margin)."""
    only_a, only_b = (0.016, 0.020) if effect else (0.028, 0.008)
    outcome = rng.choice(3, 500 * n, p=[1 - only_a - only_b, only_a, only_b])
    return c.paired_equivalent(outcome == 1, outcome == 2, 0.02)


def _partial(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Fig. 2b's partial map: per realisation a transformer map's r with |J| (Fisher z of s.d.
    0.15 around r = 0.3, or around 0 without the effect: the null's edge of its first part) and
    factored attention's, z of r = 0.9 (s.d. 0.15), paired: intersection-union of r > 0 and
    the paired gap > 0."""
    z_map = rng.normal(np.arctanh(0.3) if effect else 0.0, 0.15, n)
    z_factored = rng.normal(np.arctanh(0.9), 0.15, n)
    return c.all_of(c.correlation_above(np.tanh(z_map), 0.0),
                    c.correlation_gap(np.tanh(z_factored), np.tanh(z_map)))


def _faster(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Fig. 2a's faster: paired differences of supervised pairs to a level, heavy-tailed (t, 3
    dof) units of scale 1 around 2 (effect) or 0."""
    return c.greater(rng.standard_t(3, n) + (2.0 if effect else 0.0))


GENERIC = (
    Kind("one-sided t, normal units", "mean / s.d. = 1", functools.partial(_greater, 1.0)),
    Kind("one-sided t, heavy-tailed units (t, 2 dof)", "shift = 1", _heavy),
    Kind("TOST within +-1", "mean 0, s.d. 0.5 (null: mean at the bound)", _equivalent),
    Kind("Fisher z above r = 0.95", "z shifted by 1 s.d.", _fisher),
    Kind("McNemar exact (10 n episodes)", "discordant 0.3 vs 0.1 (null 0.2 vs 0.2)", _mcnemar),
    Kind("intersection-union (rise and fall)", "fall / s.d. = 1 (null: no fall)", _iut),
)
SNAPSHOT = (  # the rows' forms at the effects of the committed quick snapshot
    Kind("one-sided t, normal units, d = 1.65", "mean / s.d. = 1.65 (quick attention_hmm "
         "four_paths.theory_above_good_path: 0.031, s.d. 0.019)", functools.partial(_greater,
                                                                                     1.65)),
    Kind("non-inferiority t within -margin", "mean 0.4, s.d. 0.4 margins (null: mean at -margin; "
         "quick attention_hmm theory_reaches_good_denoising)", _non_inferior),
    Kind("TOST within +-margin, s.d. 0.33", "mean 0.42 margins (null: mean at the margin; quick "
         "attention_hmm large_width_is_gp)", _tost_large_width),
    Kind("paired TOST on episodes (500 n), +-0.02", "discordant 1.6 % vs 2.0 % (null 2.8 % vs "
         "0.8 %; quick omniglot samples_on_theory)", _tost_episodes),
    Kind("one-sided t on log ratios", "mean 0.53, s.d. 0.22 (quick identity potts_paper "
         "fig3_right.threshold)", _log_ratio),
    Kind("TOST within +-0.05 per point, intersection-union", "theory exact, relative s.e.m. as "
         "quick potts_paper fig3_left.theory's (null: one point at the margin, the others "
         "certain)", _theory, every_unit=True),
    Kind("TOST within +-0.05 per point, skewed draws", "as above, 30 gamma draws of skewness 1 "
         "per point", _theory_skewed, every_unit=True),
    Kind("intersection-union of 3 log ratios and log edge alpha", "log edge alpha 0.63, s.d. "
         "0.51 (null: the edge at alpha = 1; quick identity potts_paper fig3_right.location)",
         _peak),
    Kind("intersection-union of Fisher z above 0 and a paired Fisher-z gap", "map r 0.3 against "
         "factored 0.9, z s.d. 0.15 (null: map r 0; potts_paper fig2b.partial_*)", _partial),
    Kind("one-sided t, heavy-tailed units (t, 3 dof)", "shift = 2 (potts_paper fig2a.faster_*: "
         "supervised pairs to the transformer's loss)", _faster),
)
KINDS = GENERIC + SNAPSHOT


def holds_rate(kind: Kind, n: int, effect: bool, reps: int = REPS, seed: int = SEED) -> float:
    """The fraction of ``reps`` synthetic tables on which ``kind`` says "holds"."""
    rng = np.random.default_rng([seed, n, int(effect), KINDS.index(kind)])
    return float(np.mean([kind.draw(rng, n, effect).verdict == c.HOLDS for _ in range(reps)]))


@functools.cache
def power_table(reps: int = REPS, sizes: tuple[int, ...] = SIZES) -> pd.DataFrame:
    """One row per kind of test and n: ``size`` (the "holds" rate with no effect) and ``power``
    (with the stated effect); computed once per process (it is deterministic)."""
    rows = [{"test": k.name, "effect": k.effect, "n": n,
             "size": holds_rate(k, n, False, reps), "power": holds_rate(k, n, True, reps)}
            for k in KINDS for n in sizes]
    return pd.DataFrame(rows)


def power_markdown(table: pd.DataFrame) -> str:
    """The power table as Markdown: one row per kind, size and power at each n."""
    sizes = sorted(table["n"].unique())
    head = ["test", "effect"] + [f"size, n = {n}" for n in sizes] + [f"power, n = {n}"
                                                                     for n in sizes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (test, effect), g in table.groupby(["test", "effect"], sort=False):
        g = g.set_index("n")
        cells = [f"{g.loc[n, 'size']:.3f}" for n in sizes] + [f"{g.loc[n, 'power']:.3f}"
                                                              for n in sizes]
        lines.append("| " + " | ".join([test, effect, *cells]) + " |")
    return "\n".join(lines)
