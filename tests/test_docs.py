"""The documentation: schema descriptions, the generated configuration page and relative links."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workflow_lib.claims.statistics import COLUMNS
from workflow_lib.core.config import DESCRIBED, constraints, load_schema, read_config_files
from workflow_lib.core.studies import studies
from workflow_lib.pages.presets import NOT_SET, QUICK, preset_configs, preset_files
from workflow_lib.pages.reference import (
    LEAVES_OPEN,
    REGENERATE,
    check_links,
    configuration_page,
    iter_properties,
)
from workflow_lib.pages.results import with_claims_columns
from workflow_lib.pages.stage_tables import BEGIN, END, with_stage_tables

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
    expected = configuration_page(load_schema(), preset_configs())
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
    page = configuration_page(load_schema(), preset_configs())
    for key, _ in PROPERTIES:
        assert f"`{key}`" in page, key
    assert "## Choices the papers leave open" in page


STRUCTURAL = {"type", "properties", "items", "additionalProperties", "required", "default",
              "description", LEAVES_OPEN}  # keywords that are no constraint of a value in words


def test_every_constraint_of_the_schema_is_put_in_words():
    """The validator's words (``config.constraints``) cover every keyword the schema uses: a new
    keyword fails here until the error messages and the reference state it."""
    used = {word for _, node in PROPERTIES for word in node}
    used |= {word for _, node in PROPERTIES for word in node.get("items", {})}
    assert used - STRUCTURAL <= set(DESCRIBED), used - STRUCTURAL - set(DESCRIBED)


def _rows(page: str) -> dict[str, list[str]]:
    """The cells after the key of the rows of the key tables (type, allowed, description) by
    key."""
    rows = {}
    for block in page.split("| key | type | allowed | description |\n|---|---|---|---|\n")[1:]:
        for line in block.split("\n\n", 1)[0].splitlines():
            key, *cells = line[2:-2].split(" | ")
            rows[key.strip("`")] = cells
    return rows


def test_the_allowed_column_is_the_validators_words():
    rows = _rows((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8"))
    assert "matching `^[A-Za-z0-9_.]+$`" in rows["compute.gpu_model"][1]
    assert "required; matching `^[A-Za-z0-9_.-]+$`" in rows["proteins.families[].name"][1]
    for key, node in PROPERTIES:
        for words in constraints(node, lambda text: f"`{text}`"):
            assert words.replace("|", "\\|") in rows[key][1], (key, words)


def _value_tables(page: str) -> list[tuple[list[str], dict[str, list[str]]]]:
    """Each section's table of preset values: (its preset columns, {key: cells})."""
    tables = []
    for block in page.split("\nValues:\n\n")[1:]:
        lines = block.split("\n\n", 1)[0].splitlines()
        head = [c.strip() for c in lines[0].strip("|").split("|")][1:]
        rows = [line[2:-2].split(" | ") for line in lines[2:]]
        tables.append((head, {row[0].strip("`"): row[1:] for row in rows}))
    return tables


def test_preset_columns_are_what_read_config_files_merges():
    """Every cell of the committed reference's value tables is the value of the merged config
    files of its preset (``config.read_config_files``); a preset left out of a section runs
    ``config.yaml``'s values there; every leaf key has a row."""
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    merged = {name: read_config_files(files) for name, files in preset_files().items()}

    def cell(config: dict, key: str) -> str:
        for part in key.split("."):
            if part not in config:
                return NOT_SET
            config = config[part]
        return f"`{json.dumps(config, ensure_ascii=False)}`".replace("|", "\\|")

    shown = set()
    for head, rows in _value_tables(page):
        assert head[0] == QUICK
        for key, cells in rows.items():
            shown.add(key)
            assert cells == [cell(merged[name], key) for name in head], key
            assert all(cell(merged[name], key) == cell(merged[QUICK], key)
                       for name in merged.keys() - set(head)), key
    leaves = {k for k, node in PROPERTIES if "properties" not in node and "[]" not in k}
    assert shown == leaves


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
