"""The rules as a Snakemake reader finds them: one file per study in ``rules/``, included by
plain paths, lint-clean, each rule stating its own directives (nothing changes a rule after
parsing; the rules that end every study are stated once, by the helpers of ``rules/common.smk``),
each registered rule parsed with the stage function its text names, and the local rules those the
registries name."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from workflow_lib.core.registry import chunk_label, chunk_rule, chunks, resolve
from workflow_lib.core.studies import names, rules, studies
from workflow_lib.core.workflow import parsed_workflow, stage_functions

RULE_FILES = [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]


def snakemake(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_one_rules_file_per_study_found_and_each_included_in_order():
    files = {path.stem for path in (ROOT / "rules").glob("*.smk")}
    assert files == {"common", *names()}, files
    with parsed_workflow() as workflow:
        included = [Path(each.get_path_or_uri(secret_free=True)).relative_to(ROOT).as_posix()
                    for each in workflow.included]
    assert included == ["Snakefile", "rules/common.smk",
                        *(f"rules/{name}.smk" for name in names())], included


def test_no_rule_is_rewritten_after_parsing():
    internals = re.compile(r"set_params|set_log|log_modifier|benchmark_modifier|"
                           r"workflow\.rules|workflow\.localrules|\.benchmark\s*=")
    for path in RULE_FILES:
        assert not internals.search(path.read_text()), path


@pytest.fixture(scope="module")
def parsed() -> dict:
    """Each rule of the workflow parsed with its default config: name -> (the registered rule it
    runs, its stage param, log, benchmark, software environment, shell command, local)."""
    with parsed_workflow() as workflow:
        registered = workflow.globals["REGISTERED"]
        return {rule.name: (registered.get(rule.name, rule.name), rule.params.get("stage"),
                            list(rule.log), rule.benchmark, rule.conda_env, rule.shellcmd,
                            rule.name in workflow._localrules)
                for rule in workflow.rules}


def test_every_rule_states_its_directives():
    """Each rule that runs a stage, written out (``rule NAME:``) or in a loop or helper
    (``rule:``), has in its own text its log, benchmark, params, threads, resources and software
    environment."""
    text = "\n".join(path.read_text() for path in RULE_FILES)
    blocks = [b for b in re.split(r"\n(?=rule |\s+rule:)", text) if "STAGE\n" in b]
    assert len(blocks) == sum(1 for _ in re.finditer(r"^\s+STAGE$", text, re.MULTILINE))
    for block in blocks:
        for directive in ("log:", "benchmark:", "params:", "**stage_params(", "threads:",
                          "resources:", "conda:", "shell:"):
            assert directive in block, (block[:80], directive)


def test_every_registered_rule_runs_the_stage_its_text_names(parsed):
    """Every registered rule is parsed (a chunked one as its chunks' rules), each runs the stage
    function its rules file names (one per registered rule, a function of the package) with its
    log, benchmark and software environment, and is a local rule exactly when its registry entry
    says so."""
    entries, stages = rules(), stage_functions()
    assert {each[0] for each in parsed.values() if each[1]} == set(entries) == set(stages)
    for name, (registered, stage, log, benchmark, env, shell, local) in parsed.items():
        if stage is None:  # a target rule: no job of its own
            continue
        assert stage == stages[registered] and callable(resolve(stage)), name
        assert log and benchmark and env.endswith("envs/workflow_lib.yaml"), name
        assert shell.startswith("python -m workflow_lib stage {params.stage}"), name
        assert local == entries[registered].local, name


def test_the_rules_ending_every_study_are_written_once():
    """Each study's claims rule and figure rule are defined by the helpers of rules/common.smk,
    and no study's rules file writes them out."""
    for study in studies():
        text = (ROOT / "rules" / f"{study.name}.smk").read_text()
        assert f'study_claims("{study.name}")' in text, study.name
        assert f'study_figure("{study.name}"' in text, study.name
        for kind in ("claims", "figure"):
            assert f"rule {study.rule_of(kind).name}:" not in text, (study.name, kind)


def test_lint_is_clean():
    lint = snakemake("--lint")
    assert lint.returncode == 0, (lint.stdout + lint.stderr)[-3000:]


def test_chunk_rules_name_their_registered_rule_and_realisations(parsed):
    """A chunk's rule (``potts_train_r3``, ``potts_train_r0_9``) is named after its registered
    rule and its realisations, and the rules files record which registered rule it runs."""
    assert chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert [chunk_label(c) for c in chunks(list(range(4)), 3)] == ["r0-2", "r3"]
    assert chunk_rule("potts_train", list(range(10))) == "potts_train_r0_9"
    chunked = {name: each[0] for name, each in parsed.items() if each[0] != name}
    assert chunked and all(re.fullmatch(rf"{re.escape(of)}_r\d+(_\d+)?", name)
                           for name, of in chunked.items()), chunked


def test_the_report_page_job_names_the_config_files_as_merged(tmp_path):
    """A dry run with ``--configfile config.yaml config/quick_identity.yaml``: the report page
    job's params name each file once, ``config.yaml`` first and relative to the workflow, and
    the identity reading's distance; its stage writes a page that names them."""
    from workflow_lib.core.registry import Job
    from workflow_lib.pages.report import report_page

    run = snakemake("-n", "-p", "--configfile", "config.yaml", "config/quick_identity.yaml",
                    "--config", f"results={tmp_path / 'results'}")
    assert run.returncode == 0, run.stderr[-3000:]
    (line,) = [line for line in run.stdout.splitlines()
               if "stage workflow_lib.pages.report:report_page --job" in line]
    words = shlex.split(line)
    job = json.loads(words[words.index("--job") + 1])
    assert job["params"]["configfiles"] == ["config.yaml", "config/quick_identity.yaml"]
    assert job["params"]["target_hamming"] == 0.7
    snapshot = ROOT / "docs" / "results" / "quick_identity"
    page = tmp_path / "report.rst"
    report_page(Job(input={name: str(snapshot / f"{name}-claims.csv") for name in job["input"]},
                    output={"page": str(page)}, params=job["params"]))
    text = page.read_text()
    assert "<code>config.yaml</code> + <code>config/quick_identity.yaml</code>" in text
    assert "identity reading" in text
