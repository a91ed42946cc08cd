"""The figure panels: each registry entry's draw function and condition, and the one dispatcher
that draws every study's panels."""

from __future__ import annotations

import inspect

import pytest

from tests.test_potts_paper_tables import synthetic_history
from workflow_lib.core.config import load_config
from workflow_lib.core.registry import Job, resolve
from workflow_lib.core.studies import studies
from workflow_lib.pages.figure import figure

PANELS = [each for study in studies() for each in study.panels]


@pytest.mark.parametrize("panel", PANELS, ids=lambda p: p.name)
def test_each_panels_draw_function_takes_its_tables(panel):
    """The dispatcher calls ``draw(*tables, **other inputs)``: the function takes one positional
    argument per table of the panel, and Fig. 2b, drawn from no table, its models by name."""
    signature = inspect.signature(resolve(panel.draw))
    signature.bind(*panel.tables, **({"models": []} if not panel.tables else {}))


def test_panel_names_are_unique_across_studies():
    names = [each.name for each in PANELS]
    assert len(names) == len(set(names))


def _drawn(overrides: dict) -> set[str]:
    cfg = load_config(overrides)
    return {each.name for study in studies() for each in study.drawn_panels(cfg)}


def test_a_config_without_the_a_grid_has_no_fig2d():
    assert "fig2d" in _drawn({"training": {"interpolation_a": [0.0, 1.0]}})
    assert "fig2d" not in _drawn({"training": {"interpolation_a": []}})


def test_the_attention_paths_panels_follow_the_experiments():
    drawn = _drawn({"paths": {"experiments": ["two_paths"]}})
    assert {"paths_fig2c", "paths_fig2d"}.isdisjoint(drawn) and "paths_fig2e" in drawn
    drawn = _drawn({"paths": {"experiments": ["four_paths"]}})
    assert {"paths_fig2c", "paths_fig2d"} <= drawn and "paths_fig2e" not in drawn


def test_fig2b_needs_an_architecture_it_shows():
    assert "fig2b" not in _drawn({"training": {"architectures": ["factored_softmax"],
                                            "interpolation_a": []}})
    assert "fig2b" in _drawn({"training": {"architectures": ["factored"]}})


def test_the_dispatcher_draws_a_panel_from_its_tables(tmp_path):
    history = tmp_path / "training_history.csv"
    synthetic_history().to_csv(history, index=False)
    out = {ext: str(tmp_path / f"fig2a.{ext}") for ext in ("png", "pdf")}
    figure(Job(input={"training_history": str(history)}, output=out, params={"panel": "fig2a"}))
    assert all((tmp_path / f"fig2a.{ext}").stat().st_size > 1000 for ext in ("png", "pdf"))


def test_the_dispatcher_names_an_unknown_panel():
    with pytest.raises(KeyError, match="'fig9'"):
        figure(Job(params={"panel": "fig9"}))
