"""CITATION.cff: the Citation File Format's required keys, the package's version, and the two
papers the workflow reproduces."""

from __future__ import annotations

import tomllib

import yaml

from tests.conftest import ROOT


def test_citation_file_matches_the_package():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["message"] and cff["title"] and cff["authors"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["version"] == project["version"]
    assert cff["license"] == project["license"]["text"]
    assert {ref["authors"][0]["family-names"] for ref in cff["references"]} == {"Rende", "Tiberi"}
