"""What a new study adds and edits: a toy study with one rule of its own and the claims rule every
study has (``registry.claims_rule``, defined in its rules file by ``study_claims``), with its own
config section, created in a copy of the repository and run with Snakemake. ``ADDED`` and
``EDITED`` are the measured answer (the study's folder, with its ``ORDER``, its artefact's schema
tag and its claims included, and its rules file; nothing edited: the workflow finds the study,
``workflow_lib.core.studies``); the test fails when the copy differs from the repository in any
other file. Generated pages
(``docs/configuration.md``, by ``python -m workflow_lib docs``) are regenerated, not edited."""

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

TOY = "workflow_lib/studies/toy"

ADDED = {
    f"{TOY}/__init__.py": '"""A toy study: the squares of the first integers."""\n\nORDER = 50\n',
    f"{TOY}/registry.py": '''"""The toy study's rule, its table and its claims."""

from workflow_lib.core.registry import Rule, Study, claims_rule, constant

STUDY = Study(
    name="toy",
    title="Toy",
    paper="none",
    rules=(Rule("toy_squares", "workflow_lib.studies.toy.stages:squares",
                lambda cfg, wc: {"toy": cfg["toy"]}, constant(1), constant(100), local=True),
           claims_rule("toy_claims", "toy")),
    tables=("squares",),
    panels=(),
    claims="toy/claims.csv",
    claims_of="workflow_lib.studies.toy.claims:claims",
)
''',
    f"{TOY}/artefacts.py": '''"""The schema tag of the toy study's artefact."""

TOY_SQUARES = "toy-squares/1"
''',
    f"{TOY}/stages.py": '''"""Stage ``toy_squares``: the squares (artefact and table)."""

import pandas as pd

from workflow_lib.core.artefacts import write_artefact, write_csv
from workflow_lib.core.registry import Job
from workflow_lib.studies.toy.artefacts import TOY_SQUARES


def squares(job: Job) -> None:
    n = pd.Series(range(job.params["toy"]["n"]))
    write_artefact(job.output["artefact"], TOY_SQUARES, {"square": n * n}, job.params, seeds={})
    write_csv(pd.DataFrame({"n": n, "square": n * n}), job.output["squares"])
''',
    f"{TOY}/claims.py": '''"""The toy study's claims table (``claims.COLUMNS``) from its tables."""

import pandas as pd

from workflow_lib.claims import statistics as c


def claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    squares = tables["squares"]
    exact = squares["square"] == squares["n"] ** 2
    test = c.exact(float(exact.mean()), bool(exact.all()), n=len(squares))
    rows = [c.row("squares", "toy", "none", "each square is its integer squared", "", test,
                  "every row exact", "integer", kind=c.CHECK)]
    return c.table(rows)
''',
    f"{TOY}/config.schema.json": """{"properties": {"toy": {
  "type": "object", "additionalProperties": false, "default": {},
  "description": "The toy study.",
  "properties": {"n": {"type": "integer", "minimum": 1, "default": 3,
                       "description": "How many squares."}}}}}
""",
    "rules/toy.smk": '''TOY = STUDY["toy"]
TARGETS["toy"] = [f"{RESULTS}/{TOY.claims}"]


rule toy_squares:
    output:
        squares=f"{RESULTS}/{TOY.table_path('squares')}",
        artefact=f"{RESULTS}/toy/squares.h5",
    log:
        f"{LOGS}/toy/squares.log",
    benchmark:
        f"{BENCHMARKS}/toy/squares.tsv"
    localrule: True
    params:
        **stage_params("toy_squares"),
    threads: threads("toy_squares")
    resources:
        **resources("toy_squares"),
    conda:
        ENV
    shell:
        STAGE


study_claims("toy")
''',
}
# file -> (the text it has, the text it gets)
EDITED: dict[str, tuple[str, str]] = {}  # file -> (text, its replacement): none


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
    for rel, text in ADDED.items():
        (wd / rel).parent.mkdir(parents=True, exist_ok=True)
        (wd / rel).write_text(text)
    for rel, (old, new) in EDITED.items():
        before = (wd / rel).read_text()
        assert before.count(old) == 1, rel
        (wd / rel).write_text(before.replace(old, new))
    # the measurement: every file the copy adds or changes is in ADDED or EDITED
    copy, repo = _files(wd), _files(ROOT)
    assert copy - repo == set(ADDED)
    changed = {rel for rel in copy & repo if not filecmp.cmp(wd / rel, ROOT / rel, shallow=False)}
    assert changed == set(EDITED)

    (wd / "tiny.yaml").write_text("results: results\ntoy: {n: 4}\n")
    run = snakemake_in(wd, "results/toy/claims.csv", timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    table = pd.read_csv(wd / "results/toy/squares.csv")
    assert table["square"].tolist() == [0, 1, 4, 9]  # n = 4
    # its schema tag lives in its folder: the artefact reads back under it
    art = read_artefact(wd / "results/toy/squares.h5", "toy-squares/1", required=("square",))
    assert art["square"].tolist() == [0, 1, 4, 9]
    assert (wd / "results/logs/toy/squares.log").exists()
    assert (wd / "results/benchmarks/toy/squares.tsv").exists()
    # its claims rule is the one every study has: its claims table, log and benchmark
    claims = pd.read_csv(wd / "results/toy/claims.csv")
    assert tuple(claims.columns) == COLUMNS and claims["verdict"].tolist() == [HOLDS]
    assert "check squares" in (wd / "results/logs/toy/claims.log").read_text()
    assert (wd / "results/benchmarks/toy/claims.tsv").exists()
    # a claims table without a column of claims.COLUMNS stops its job with one line naming
    # the study and the column, and writes nothing
    (wd / f"{TOY}/claims.py").write_text(ADDED[f"{TOY}/claims.py"].replace(
        "return c.table(rows)", 'return c.table(rows).drop(columns="kind")'))
    (wd / "results/toy/claims.csv").unlink()
    broken = snakemake_in(wd, "results/toy/claims.csv", timeout=600)
    line = ("error: study toy: the claims table of workflow_lib.studies.toy.claims:claims has no "
            "column kind (every claims table has the columns "
            "workflow_lib.claims.statistics.COLUMNS)")
    assert broken.returncode != 0 and line in broken.stderr.splitlines(), broken.stderr[-3000:]
    assert (wd / "results/logs/toy/claims.log").read_text().splitlines()[-1] == line
    assert not (wd / "results/toy/claims.csv").exists()
    # the study's config section is validated like the others: one line naming the key
    (wd / "tiny.yaml").write_text("results: results\ntoy: {n: 0}\n")
    bad = snakemake_in(wd, "results/toy/squares.csv", "-n", timeout=600)
    assert bad.returncode != 0 and "toy.n" in bad.stderr, bad.stderr[-2000:]
