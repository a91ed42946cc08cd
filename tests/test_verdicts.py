"""Claims tables in words (``workflow_lib.pages.verdicts``, ``workflow_lib.pages.readings``): units
counted in the plural, why claims are not resolved, and the default run's verdicts beside the
identity reading's, read from the committed snapshots."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import ROOT
from workflow_lib.claims.statistics import CHECK, CLAIM, counted, plural
from workflow_lib.core.config import read_config_files
from workflow_lib.pages.readings import IDENTITY_DISTANCE, PAPER_DISTANCE, reading
from workflow_lib.pages.results import claim_cells
from workflow_lib.pages.verdicts import (
    DEFAULT_STUDY,
    IDENTITY_PRESET,
    default_runs,
    gating,
    read_claims,
    run_snapshot,
    verdict_counts,
    why_not_resolved,
)

SNAPSHOTS = ROOT / "docs" / "results"


@pytest.mark.parametrize("unit, many", [
    ("realisation", "realisations"), ("family", "families"), ("episode", "episodes"),
    ("theory solve", "theory solves"), ("theory (deterministic)", "theories (deterministic)"),
    ("random order", "random orders"), ("day", "days"), ("pass", "passes")])
def test_a_unit_is_plural_where_n_is_not_one(unit, many):
    assert plural(unit) == many
    assert counted(1, unit) == f"1 {unit}"
    assert counted(3, unit) == f"3 {many}" and counted(0, unit) == f"0 {many}"


def test_a_results_page_row_counts_its_units_in_the_plural():
    claims = read_claims(SNAPSHOTS / "quick" / f"{DEFAULT_STUDY}-claims.csv").set_index("id",
                                                                                      drop=False)
    assert "(n = 3 realisations)" in claim_cells(claims.loc["fig2b.copy"])[4]
    assert "(n = 1 theory curve)" in claim_cells(claims.loc["fig3_left.peak"])[4]
    page = (SNAPSHOTS / "potts_paper-quick.md").read_text(encoding="utf-8")
    assert "3 realisation)" not in page and "(n = 3 realisations)" in page


def _row(id: str, kind: str, verdict: str, gated_by: str = "") -> dict:
    return {"id": id, "kind": kind, "statement": f"statement of {id}", "verdict": verdict,
            "gated_by": gated_by}


def test_why_not_resolved_names_each_failing_check_and_what_it_gates():
    claims = pd.DataFrame([
        _row("a", CLAIM, "not resolved", "data.one"),
        _row("b", CLAIM, "not resolved", "data.one;data.two"),
        _row("c", CLAIM, "not resolved"),  # its own test did not decide
        _row("d", CLAIM, "holds"),
        _row("data.one", CHECK, "does not hold"), _row("data.two", CHECK, "does not hold")])
    assert gating(claims) == {"data.one": ["a", "b"], "data.two": ["b"]}
    text = why_not_resolved(claims)
    assert text.startswith("2 of the 4 claims are not resolved because a check they rest on "
                           "does not hold: ")
    assert "`data.one` (“statement of data.one”) gates 2; `data.two`" in text
    assert "`a`" not in text
    assert "`data.one` (“statement of data.one”) gates 2: `a`, `b`" in why_not_resolved(
        claims, ids=True)
    assert why_not_resolved(claims.assign(gated_by="")) == ""
    assert why_not_resolved(claims.drop(columns="gated_by")) == ""


def test_the_readings_are_those_of_the_two_quick_presets():
    assert "literal reading" in reading(PAPER_DISTANCE) and "glassy" in reading(PAPER_DISTANCE)
    assert "identity reading" in reading(IDENTITY_DISTANCE)
    assert "neither reading" in reading(0.5)
    quick = read_config_files([ROOT / "config.yaml"])
    identity = read_config_files([ROOT / "config.yaml", ROOT / IDENTITY_PRESET])
    assert quick["beta_tuning"]["target_hamming"] == pytest.approx(PAPER_DISTANCE)
    assert identity["beta_tuning"]["target_hamming"] == pytest.approx(IDENTITY_DISTANCE)


def test_the_default_runs_words_are_its_snapshots_verdicts():
    """The default run's paragraph counts the verdicts of the committed runs of ``config.yaml``
    and of the identity preset, and names every claim the failing checks gated."""
    assert run_snapshot(SNAPSHOTS, []).name == "quick"
    assert run_snapshot(SNAPSHOTS, [IDENTITY_PRESET]).name == "quick_identity"
    text = default_runs(SNAPSHOTS, "", ids=True)
    for name in ("quick", "quick_identity"):
        claims = read_claims(SNAPSHOTS / name / f"{DEFAULT_STUDY}-claims.csv")
        assert verdict_counts(claims[claims["kind"] == CLAIM]) in text, name
        assert f"]({DEFAULT_STUDY}-{name}.md)" in text
    claims = read_claims(SNAPSHOTS / "quick" / f"{DEFAULT_STUDY}-claims.csv")
    assert why_not_resolved(claims, ids=True) in text
    assert text.index("literal reading") < text.index("identity reading")


def test_without_the_default_runs_snapshots_the_paragraph_is_empty(tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / f"{DEFAULT_STUDY}-source.json").write_text(
        '{"configs": ["tiny.yaml"], "targets": []}')
    assert run_snapshot(tmp_path, []) is None and default_runs(tmp_path, "") == ""
