"""A new study is its folder and its rules file: the template study
(``workflow_lib/studies/_template/``, with its rules file ``rules.smk``) copied as a toy study
``toy`` into a copy of the repository, its name written in, and run with Snakemake: one rule per
realisation, its table across realisations (``finish_tables``) and the claims rule every study
has. The test fails when the copy differs from the repository in any file but the toy's folder
and rules file: the workflow finds the study (``workflow_lib.core.studies``), nothing else is
edited."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.workflow_runs import WORKFLOW_FILES, repo_copy, snakemake_in
from workflow_lib.claims.statistics import COLUMNS, HOLDS
from workflow_lib.core.artefacts import read_artefact

pytestmark = pytest.mark.slow

TEMPLATE = ROOT / "workflow_lib" / "studies" / "_template"
TOY = "workflow_lib/studies/toy"


def add_toy(wd: Path) -> set[str]:
    """The template copied into the repository copy ``wd`` as study ``toy``, as
    ``docs/pipeline.md`` says: its folder and its rules file, ``template`` written as ``toy``;
    the files added, relative to ``wd``."""
    added = set()
    for path in sorted(TEMPLATE.iterdir()):
        if path.is_dir():  # __pycache__
            continue
        rel = "rules/toy.smk" if path.name == "rules.smk" else f"{TOY}/{path.name}"
        text = path.read_text()
        for old, new in (("template", "toy"), ("Template", "Toy"), ("TEMPLATE", "TOY")):
            text = text.replace(old, new)
        (wd / rel).parent.mkdir(parents=True, exist_ok=True)
        (wd / rel).write_text(text)
        added.add(rel)
    return added


def _files(root: Path) -> set[str]:
    """The files of the workflow under ``root`` (what a workflow copy holds), relative."""
    out = set()
    for name in (*WORKFLOW_FILES, "workflow_lib"):
        top = root / name
        for path in [top] if top.is_file() else top.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                out.add(str(path.relative_to(root)))
    return out


def test_a_new_study_is_its_folder_and_its_rules_file(tmp_path):
    wd = repo_copy(tmp_path / "wf")
    added = add_toy(wd)
    # the measurement: the copy adds the toy's files and changes none of the repository's
    copy, repo = _files(wd), _files(ROOT)
    assert copy - repo == added
    changed = {rel for rel in copy & repo if not filecmp.cmp(wd / rel, ROOT / rel, shallow=False)}
    assert changed == set()

    (wd / "tiny.yaml").write_text("results: results\ntoy: {n: 4, realisations: 2}\n")
    plan = snakemake_in(wd, "results/toy/tables/claims.csv", "-n", timeout=600)
    assert plan.returncode == 0, (plan.stdout + plan.stderr)[-3000:]
    assert {"toy_squares_r0", "toy_squares_r1", "toy_tables", "toy_claims"} <= set(
        line.split()[0] for line in plan.stdout.split("Job stats:", 1)[1].splitlines()[3:]
        if line.strip() and not line.startswith("total")), plan.stdout[-2000:]
    lint = snakemake_in(wd, "--lint", timeout=600)
    assert lint.returncode == 0, (lint.stdout + lint.stderr)[-3000:]
    run = snakemake_in(wd, "results/toy/tables/claims.csv", timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    table = pd.read_csv(wd / "results/toy/tables/squares.csv")
    assert table["realisation"].tolist() == [0] * 4 + [1] * 4  # in realisation order
    assert table["square"].tolist() == [0, 1, 4, 9, 1, 4, 9, 16]  # n = 4, offset by r
    # its schema tag lives in its folder: the artefact reads back under it
    art = read_artefact(wd / "results/toy/r1/squares.h5", "toy-squares/1", required=("squares",))
    assert art["squares"].tolist() == [1, 4, 9, 16]
    assert (wd / "results/logs/toy/r1/squares.log").exists()
    assert (wd / "results/benchmarks/toy/r1/squares.tsv").exists()
    # its claims rule is the one every study has: its claims table, log and benchmark
    claims = pd.read_csv(wd / "results/toy/tables/claims.csv")
    assert tuple(claims.columns) == COLUMNS and claims["verdict"].tolist() == [HOLDS]
    assert "check squares" in (wd / "results/logs/toy/tables/claims.log").read_text()
    assert (wd / "results/benchmarks/toy/tables/claims.tsv").exists()
    # a claims table without a column of claims.COLUMNS stops its job with one line naming
    # the study and the column, and writes nothing
    source = (wd / f"{TOY}/claims.py").read_text()
    (wd / f"{TOY}/claims.py").write_text(source.replace(
        "return c.table(rows)", 'return c.table(rows).drop(columns="kind")'))
    (wd / "results/toy/tables/claims.csv").unlink()
    broken = snakemake_in(wd, "results/toy/tables/claims.csv", timeout=600)
    line = ("error: study toy: the claims table of workflow_lib.studies.toy.claims:toy_claims "
            "has no column kind (every claims table has the columns "
            "workflow_lib.claims.statistics.COLUMNS)")
    assert broken.returncode != 0 and line in broken.stderr.splitlines(), broken.stderr[-3000:]
    assert (wd / "results/logs/toy/tables/claims.log").read_text().splitlines()[-1] == line
    assert not (wd / "results/toy/tables/claims.csv").exists()
    # the study's config section is validated like the others: one line naming the key
    (wd / "tiny.yaml").write_text("results: results\ntoy: {n: 0}\n")
    bad = snakemake_in(wd, "results/toy/tables/squares.csv", "-n", timeout=600)
    assert bad.returncode != 0 and "toy.n" in bad.stderr, bad.stderr[-2000:]
