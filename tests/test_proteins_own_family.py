"""A family of one's own as docs/proteins.md tells a user to run it: ``scripts/make_protein_data.py
subsample`` run as a user runs it (on the shipped PF00014 subsample), and the docs' short config
files merged over ``config/proteins.yaml``."""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import yaml

from workflow_lib.core.config import read_config_files

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "make_protein_data.py"
SHIPPED = ROOT / "data" / "proteins" / "PF00014" / "PF00014.fasta.gz"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "subsample", *map(str, args)],
                          capture_output=True, text=True)


def records(path: Path) -> list[str]:
    text = gzip.decompress(path.read_bytes()).decode()
    return [">" + chunk for chunk in text.lstrip(">").rstrip("\n").split("\n>")]


def test_subsample_keeps_records_in_order_reproducibly(tmp_path):
    done = run(SHIPPED, tmp_path / "a.fasta.gz", "--size", 100)
    assert done.returncode == 0, done.stderr
    again = run(SHIPPED, tmp_path / "b.fasta.gz", "--size", 100)
    a, b = (tmp_path / "a.fasta.gz").read_bytes(), (tmp_path / "b.fasta.gz").read_bytes()
    assert a == b and again.returncode == 0
    assert "100 of 2000 records (seed 0)" in done.stdout
    assert hashlib.sha256(a).hexdigest() in done.stdout
    full, kept = records(SHIPPED), records(tmp_path / "a.fasta.gz")
    assert len(kept) == 100 and len(set(kept)) == 100
    positions = [full.index(record) for record in kept]
    assert positions == sorted(positions)
    other = run(SHIPPED, tmp_path / "c.fasta.gz", "--size", 100, "--seed", 1)
    assert other.returncode == 0 and (tmp_path / "c.fasta.gz").read_bytes() != a


def test_subsample_reads_plain_fasta(tmp_path):
    plain = tmp_path / "plain.fasta"
    plain.write_bytes(gzip.decompress(SHIPPED.read_bytes()))
    assert run(plain, tmp_path / "p.fasta.gz", "--size", 100).returncode == 0
    assert run(SHIPPED, tmp_path / "g.fasta.gz", "--size", 100).returncode == 0
    assert (tmp_path / "p.fasta.gz").read_bytes() == (tmp_path / "g.fasta.gz").read_bytes()


def test_subsample_bad_input_one_line(tmp_path):
    truncated = tmp_path / "cut.fasta.gz"
    truncated.write_bytes(SHIPPED.read_bytes()[:5000])
    cases = {
        (SHIPPED, "--size", 2001): "holds 2000 records; give a size from 1 to 2000",
        (tmp_path / "missing.fasta", "--size", 10): "no such alignment file",
        (truncated, "--size", 10): "truncated or corrupt gzip file",
    }
    for (source, *rest), message in cases.items():
        done = run(source, tmp_path / "out.fasta.gz", *rest)
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and str(source) in lines[0], done.stderr
    assert not (tmp_path / "out.fasta.gz").exists()


def test_the_docs_config_files_merge_over_the_preset(tmp_path):
    """The docs' ``my.yaml`` (its families pointed at a shipped family) and budget block, merged
    over ``config/proteins.yaml`` as the documented command does: the user's family replaces the
    preset's, the budget keys change, every other key stays the preset's."""
    text = (ROOT / "docs" / "proteins.md").read_text()
    own = text[text.index("## Your own alignment"):text.index("## What the study does")]
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", own, re.S)]
    mine = next(b for b in blocks if "results" in b)
    budget = next(b for b in blocks if "compute" in b)
    mine["proteins"]["families"][0] |= {"alignment": str(SHIPPED),
                                        "distances": str(SHIPPED.with_name("PF00014_struct.dat"))}
    files = [ROOT / "config.yaml", ROOT / "config" / "proteins.yaml"]
    for name, block in (("my.yaml", mine), ("budget.yaml", budget)):
        (tmp_path / name).write_text(yaml.safe_dump(block))
        files.append(tmp_path / name)
    preset = read_config_files(files[:2])["proteins"]
    got = read_config_files(files)
    p = got["proteins"]
    assert p["families"] == mine["proteins"]["families"] and got["results"] == mine["results"]
    assert got["compute"]["threads"] == 1
    changed = set(budget["proteins"])
    assert {k: p[k] for k in changed if k != "transformer"} == {
        k: v for k, v in budget["proteins"].items() if k != "transformer"}
    assert p["transformer"] == preset["transformer"] | budget["proteins"]["transformer"]
    assert {k: v for k, v in p.items() if k not in changed | {"families"}} == {
        k: v for k, v in preset.items() if k not in changed | {"families"}}
