"""The documentation: schema descriptions, the generated configuration page and relative links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workflow_lib.claims import COLUMNS
from workflow_lib.config import load_schema
from workflow_lib.pages import with_claims_columns
from workflow_lib.reference import (
    LEAVES_OPEN,
    REGENERATE,
    check_links,
    configuration_page,
    iter_properties,
)
from workflow_lib.registry import studies
from workflow_lib.stage_tables import BEGIN, END, with_stage_tables

ROOT = Path(__file__).resolve().parents[1]
PROPERTIES = list(iter_properties(load_schema()))


def test_schema_walk_reaches_nested_keys():
    keys = {key for key, _ in PROPERTIES}
    assert {"compute", "omniglot.network", "paths.sampler", "paths.sampler.warmup",
            "omniglot.training.identical_query.start"} <= keys  # fmt: skip


@pytest.mark.parametrize("key, node", PROPERTIES, ids=[key for key, _ in PROPERTIES])
def test_every_property_has_a_description(key, node):
    text = node.get("description")
    assert isinstance(text, str) and text.strip(), f"config key {key} has no description"


def test_no_description_cites_a_spec():
    cited = [key for key, node in PROPERTIES
             for text in (node.get("description", ""), node.get(LEAVES_OPEN, ""))
             if re.search(r"\bspec\b|§", text, re.IGNORECASE)]  # fmt: skip
    assert not cited, f"descriptions that cite a spec: {cited}"


def test_choices_left_open_are_sentences():
    marked = {key: node[LEAVES_OPEN] for key, node in PROPERTIES if LEAVES_OPEN in node}
    assert marked, "no key is marked x-paper-leaves-open"
    for key, text in marked.items():
        assert isinstance(text, str) and text.strip().endswith("."), key


def test_configuration_page_is_current():
    page = ROOT / "docs" / "configuration.md"
    expected = configuration_page(load_schema())
    assert page.is_file() and page.read_text(encoding="utf-8") == expected, (
        f"docs/configuration.md is out of date with the config schema; regenerate it with: "
        f"{REGENERATE}"
    )


def test_stage_tables_are_current_and_have_every_rule():
    """docs/pipeline.md's stage tables are what the registries and the parsed rules files give:
    one row per registered rule of every study, each with its outputs."""
    page = (ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8")
    assert with_stage_tables(page) == page, (
        "docs/pipeline.md's stage tables are out of date; regenerate them with: "
        "python -m workflow_lib docs")
    tables = page.split(BEGIN, 1)[1].split(END, 1)[0]
    for study in studies():
        for rule in study.rules:
            assert re.search(rf"^\| `{rule.name}` \| `[^|]+` \|", tables, re.MULTILINE), rule.name


def test_claims_columns_are_current_and_each_has_its_meaning():
    """docs/pipeline.md lists the columns every claims table has as ``claims.COLUMNS`` gives
    them, and its table of their meanings names each of them once."""
    page = (ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8")
    assert with_claims_columns(page) == page, (
        "docs/pipeline.md's claims columns are out of date; regenerate them with: "
        "python -m workflow_lib docs")
    meanings = page.split("| column | meaning |", 1)[1].split("\n\n", 1)[0]
    named = [c.strip() for line in meanings.splitlines()[2:] for c in line.split("|")[1].split(",")]
    assert sorted(named) == sorted(COLUMNS)


def test_configuration_page_lists_every_key():
    page = configuration_page(load_schema())
    for key, _ in PROPERTIES:
        assert f"`{key}`" in page, key
    assert "## Choices the papers leave open" in page


def test_documentation_links_resolve():
    broken = check_links(ROOT)
    assert not broken, "broken relative links:\n" + "\n".join(broken)


def test_check_links_finds_the_broken_link(tmp_path):
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    (tmp_path / "docs" / "figures" / "plot.png").write_bytes(b"")
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "# Project\n\n"
        "See [the guide](docs/guide.md#setup) and ![a plot](docs/figures/plot.png).\n"
        "Skipped: [site](https://example.org/x.md), [mail](mailto:a@b.c), [top](#project).\n"
        "Not a link: `[code](missing.md)`.\n\n"
        "    [indented code](missing.md)\n\n"
        "A [broken one](docs/missing.md).\n",
        encoding="utf-8",
    )
    assert check_links(tmp_path) == ["README.md:9: broken link docs/missing.md"]

    (tmp_path / "docs" / "sub").mkdir()
    (tmp_path / "docs" / "sub" / "page.md").write_text(
        "[up](../guide.md) [gone](../../nowhere.md)\n", encoding="utf-8"
    )
    assert check_links(tmp_path) == ["README.md:9: broken link docs/missing.md",
                                      "docs/sub/page.md:1: broken link ../../nowhere.md"]
