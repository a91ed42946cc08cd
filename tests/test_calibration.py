"""Calibration of the claims tests: on synthetic per-unit tables drawn with no effect each kind
says "holds" at most at the nominal rate, with the stated effect its power grows with n (falls,
for a claim on every unit), the
attention-paths rows' forms resolve the effects of the quick snapshot at n = 8, and the t-test's
power at small n is the non-central t's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.conftest import ROOT
from workflow_lib.claims import calibration as k
from workflow_lib.claims import statistics as c
from workflow_lib.core.code_digest import module_digest
from workflow_lib.pages.results import stored_power_table

REPS = 1000
SLACK = 3 * math.sqrt(c.ALPHA * (1 - c.ALPHA) / REPS)  # three binomial standard errors


@pytest.mark.parametrize("kind", k.KINDS, ids=[kind.name for kind in k.KINDS])
def test_no_effect_holds_at_most_at_the_nominal_rate(kind):
    for n in (3, 8):
        assert k.holds_rate(kind, n, False, REPS) <= c.ALPHA + SLACK, (kind.name, n)


AVERAGES = [kind for kind in k.KINDS if not kind.every_unit]
EVERY_UNIT = [kind for kind in k.KINDS if kind.every_unit]


@pytest.mark.parametrize("kind", AVERAGES, ids=[kind.name for kind in AVERAGES])
def test_power_grows_with_the_number_of_units(kind):
    small, large = k.holds_rate(kind, 3, True, 400), k.holds_rate(kind, 30, True, 400)
    assert large > 0.6 and (large > small or large == 1.0), (kind.name, small, large)


@pytest.mark.parametrize("kind", EVERY_UNIT, ids=[kind.name for kind in EVERY_UNIT])
def test_a_claim_on_every_unit_resolves_few_and_loses_power_with_more(kind):
    """A claim that each unit must show (a theory at every simulated point): three units at the
    snapshot's precision resolve it, and each unit added can only lower the power, as the
    power of an intersection of independent units is the product of theirs."""
    powers = [k.holds_rate(kind, n, True, 400) for n in (3, 8, 30)]
    assert powers[0] > 0.6 and powers[0] > powers[1] > powers[2], (kind.name, powers)


@pytest.mark.parametrize("kind", [s for s in k.SNAPSHOT if not s.every_unit],
                         ids=[s.name for s in k.SNAPSHOT if not s.every_unit])
def test_eight_units_resolve_the_effects_of_the_snapshot(kind):
    """The rows' forms at the effects the quick snapshots show: power 0.8 at least with eight
    units (realisations; 4000 episodes)."""
    assert k.holds_rate(kind, 8, True, 400) >= 0.8, kind.name


def test_t_power_at_three_units_is_the_noncentral_t():
    n, d = 3, 1.0
    expected = stats.nct.sf(stats.t.ppf(1 - c.ALPHA, n - 1), n - 1, d * np.sqrt(n))
    measured = k.holds_rate(k.KINDS[0], n, True, REPS)
    assert measured == pytest.approx(expected, abs=3 * math.sqrt(expected / REPS))


def test_power_table_has_every_kind_at_every_size():
    table = k.power_table(reps=50, sizes=(3, 8))
    assert len(table) == 2 * len(k.KINDS) and table[["size", "power"]].notna().all().all()
    page = k.power_markdown(table)
    assert all(kind.name in page for kind in k.KINDS)


def test_the_committed_table_is_the_code_installed_and_recomputes():
    """docs/calibration.csv, which the docs read (``pages.stored_power_table``), was computed by
    the code installed (its digest), holds every kind at every n, and a row of it recomputes."""
    stored = pd.read_csv(ROOT / "docs" / "calibration.csv")
    assert (stored["code"] == module_digest(k.__name__)).all(), \
        "docs/calibration.csv is stale: run python -m workflow_lib docs"
    assert len(stored) == len(k.KINDS) * len(k.SIZES)
    read = stored_power_table(ROOT / "docs" / "calibration.csv")
    assert read.equals(stored.drop(columns="code"))
    kind = k.KINDS[-1]
    row = stored[(stored["test"] == kind.name) & (stored["n"] == 3)].iloc[0]
    assert (row["size"], row["power"]) == (k.holds_rate(kind, 3, False),
                                           k.holds_rate(kind, 3, True))
