"""The rules as a Snakemake reader finds them: one file per study in ``rules/``, included by
plain paths, lint-clean, each rule stating its own directives (nothing changes a rule after
parsing), the local rules those the registries name."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from tests.conftest import ROOT
from workflow_lib.registry import STUDY_NAMES, chunk_label, chunk_rule, chunks, registered, rules

RULE_FILES = [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]


def snakemake(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_one_rules_file_per_study_included_by_a_plain_path():
    names = {path.stem for path in (ROOT / "rules").glob("*.smk")}
    assert names == {"common", *STUDY_NAMES}, names
    includes = re.findall(r'^include: "(.+)"$', (ROOT / "Snakefile").read_text(), re.MULTILINE)
    assert includes == ["rules/common.smk", *(f"rules/{name}.smk" for name in STUDY_NAMES)]


def test_no_rule_is_rewritten_after_parsing():
    internals = re.compile(r"set_params|set_log|log_modifier|benchmark_modifier|"
                           r"workflow\.rules|workflow\.localrules|\.benchmark\s*=")
    for path in RULE_FILES:
        assert not internals.search(path.read_text()), path


def test_every_registered_rule_states_its_directives():
    """Each registered rule's own text has its log, benchmark, params, threads, resources and
    software environment, runs its stage, and is a local rule when its registry entry says so."""
    text = "\n".join(path.read_text() for path in RULE_FILES)
    blocks = re.split(r"\n(?=rule |    rule:)", text)
    stated = {}
    for block in blocks:
        m = re.match(r'rule (\w+):|    rule:\n\s+name:\n\s+(\w+)', block)
        if m:
            stated[m.group(1) or m.group(2)] = block
    for name, entry in rules().items():
        block = stated.get(name) or stated["name"]  # Omniglot's FLOW loop names its rules `name`
        for directive in ("log:", "benchmark:", "params:", "threads:", "resources:", "conda:",
                          "shell:"):
            assert directive in block, (name, directive)
        assert f'stage_params("{name}"' in block or name not in stated, name
        assert ("localrule: True" in block) == entry.local, name


def test_lint_is_clean():
    lint = snakemake("--lint")
    assert lint.returncode == 0, (lint.stdout + lint.stderr)[-3000:]


def test_the_software_environment_installs_this_checkout():
    env = yaml.safe_load((ROOT / "envs" / "workflow_lib.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert [(ROOT / "envs" / each).resolve() for each in pip] == [ROOT]
    assert (ROOT / "pyproject.toml").is_file()


def test_chunk_rules_name_their_registered_rule_and_realisations():
    """A chunk's rule (``train_r3``, ``train_r0_9``) maps back to its registered rule, and no
    registered rule's name reads as a chunk's."""
    assert chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert [chunk_label(c) for c in chunks(list(range(4)), 3)] == ["r0-2", "r3"]
    for name in rules():
        assert registered(name) == name
        for chunk in ([3], list(range(10))):
            assert registered(chunk_rule(name, chunk)) == name
    assert chunk_rule("train", list(range(10))) == "train_r0_9"
