"""Calibration of the claims tests (``workflow_lib.claims``): how often each kind of test says
"holds" on synthetic per-unit tables drawn with no effect (its size, at most the nominal
``claims.ALPHA``) and with an effect of stated size (its power), at n = 3, 8 and 30 units.

Each kind draws ``reps`` tables of ``n`` units from a fixed seed, so the table is the same on
every run; ``python -m workflow_lib docs`` writes it into ``docs/pipeline.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workflow_lib import claims as c

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


def _greater(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    return c.greater(rng.normal(1.0 if effect else 0.0, 1.0, n))


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


def _theory(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Fig. 3 left's equivalence: relative residuals of simulation points about the theory,
    s.d. 0.016 (the quick snapshots'), centred (effect) or at the margin 0.05 (null)."""
    return c.equivalent(rng.normal(0.0 if effect else 0.05, 0.016, n), 0.05)


def _peak(rng: np.random.Generator, n: int, effect: bool) -> c.Test:
    """Fig. 3 right's location: a rise, a fall and a rise beyond alpha = 1 (three log ratios of
    s.d. 1), the last absent without the effect."""
    parts = [rng.normal(3.0, 1.0, n), rng.normal(3.0, 1.0, n),
             rng.normal(1.0 if effect else 0.0, 1.0, n)]
    return c.all_of(*(c.greater(x) for x in parts))


KINDS = (
    Kind("one-sided t, normal units", "mean / s.d. = 1", _greater),
    Kind("one-sided t, heavy-tailed units (t, 2 dof)", "shift = 1", _heavy),
    Kind("TOST within +-1", "mean 0, s.d. 0.5 (null: mean at the bound)", _equivalent),
    Kind("Fisher z above r = 0.95", "z shifted by 1 s.d.", _fisher),
    Kind("McNemar exact (10 n episodes)", "discordant 0.3 vs 0.1 (null 0.2 vs 0.2)", _mcnemar),
    Kind("intersection-union (rise and fall)", "fall / s.d. = 1 (null: no fall)", _iut),
    Kind("one-sided t on log ratios (Fig. 3 right's edge)", "mean 0.53, s.d. 0.22", _log_ratio),
    Kind("TOST within +-0.05 (Fig. 3 left's theory)", "mean 0, s.d. 0.016 (null: at the margin)",
         _theory),
    Kind("intersection-union of 3 (Fig. 3 right's location)", "third part / s.d. = 1 (null: "
         "absent)", _peak),
)


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
