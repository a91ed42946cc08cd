"""The protein jobs' SLURM runtime and memory: read from the family's size at planning time,
growing with L, M and the budget, and bounding what the protein benchmark and the committed
families run measured."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import ROOT
from workflow_lib.core.config import read_config_files
from workflow_lib.proteins.alignment import AlignmentError, alignment_size, read_alignment
from workflow_lib.studies.proteins import resources
from workflow_lib.studies.proteins.registry import STUDY

BENCH = ROOT / "benchmarks" / "results" / "bench_proteins.csv"
FIT = ROOT / "benchmarks" / "fit_protein_resources.py"
FAMILIES = ROOT / "docs" / "results" / "families"
KINDS = ("plmdca", "factored", "vanilla1", "vanilla3")


@pytest.mark.parametrize("path", ["PF00014/PF00014.fasta.gz", "PF00677/PF00677.fasta.gz",
                                  "PF13354/PF13354.fasta.gz"])
def test_alignment_size_is_the_alignments_shape(path):
    full = ROOT / "data" / "proteins" / path
    assert alignment_size(full) == read_alignment(full).seqs.shape


def test_alignment_size_of_a3m_multiline_records_and_bad_files(tmp_path):
    a3m = tmp_path / "x.a3m.gz"
    a3m.write_bytes(gzip.compress(b"#comment\n>a\nAC-d\nDE\n>b\nACa-DE\n>c\nACD-E\n"))
    assert alignment_size(a3m) == read_alignment(a3m).seqs.shape == (3, 5)
    empty = tmp_path / "empty.fasta"
    empty.write_text("")
    for path, message in ((empty, "no records"), (tmp_path / "missing.fasta", "no such")):
        with pytest.raises(AlignmentError, match=message) as info:
            alignment_size(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)


def bench_rows() -> pd.DataFrame:
    """The rows the laws are fitted to (``fit_protein_resources.current_rows``)."""
    spec = importlib.util.spec_from_file_location("fit_protein_resources", FIT)
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    return fit.current_rows(BENCH)


def test_the_laws_bound_every_benchmark_row():
    """The measured wall time and peak memory of each configuration's newest benchmark row are
    below the estimate for its own L, M, heads and budget (the constants are bounds fitted to
    these rows)."""
    rows = bench_rows()
    assert (rows["model"] == "baseline").any() and rows["M"].nunique() > 1
    for row in rows.itertuples():
        if row.model == "baseline":
            if not pd.isna(row.wall_s):
                assert resources.BASELINE["seconds"](row.L, row.M_all) >= row.wall_s, row
            assert resources.BASELINE["mb"](row.L, row.M_all) >= row.peak_rss_mb, row
            continue
        kind, H = resources.model_kind(row.model)
        budget = row.steps if kind.startswith("vanilla") else row.iterations
        assert resources.fit_seconds(kind, row.L, row.M_all, H, budget) >= row.wall_s, row
        assert resources.fit_mb(kind, row.L, row.M_all, H) >= row.peak_rss_mb, row


@pytest.mark.parametrize("kind", KINDS)
def test_the_estimates_grow_with_L_M_and_the_budget(kind):
    H = 4 if kind == "factored" else 1
    for amount in (lambda L, M: resources.fit_seconds(kind, L, M, H, 100),
                   lambda L, M: resources.fit_mb(kind, L, M, H)):
        assert amount(50, 1000) < amount(100, 1000) < amount(200, 1000)
        assert amount(100, 1000) < amount(100, 4000) < amount(100, 16000)
    assert resources.fit_seconds(kind, 100, 1000, H, 100) < resources.fit_seconds(
        kind, 100, 1000, H, 1000)
    if kind == "factored":
        assert resources.fit_seconds(kind, 100, 1000, 4, 100) < resources.fit_seconds(
            kind, 100, 1000, 32, 100)


def preset(*names: str) -> dict:
    return read_config_files([ROOT / name for name in names])


def test_the_registry_asks_by_family_and_model(tmp_path):
    """The rules' resources follow the family's alignment and the model: PF13354 (L = 202,
    M = 7515) asks more than PF00014's subsample (L = 53, M = 2000), 32 heads more than 4; an
    unreadable alignment plans its jobs at the least."""
    cfg = preset("config.yaml", "config/proteins_pf13354.yaml")
    small = preset("config.yaml", "config/proteins_families.yaml")
    fit, data = STUDY.rule("protein_fit"), STUDY.rule("protein_data")
    big = fit.resources(cfg, {"family": cfg["proteins"]["families"][0]["name"], "model": "plmdca"})
    little = fit.resources(small, {"family": "PF00014_2000", "model": "plmdca"})
    assert big["runtime"] > little["runtime"] and big["mem_mb"] > little["mem_mb"]
    h4, h32 = (fit.resources(cfg, {"family": "PF13354", "model": f"factored-H{h}"})
               for h in (4, 32))
    assert h32["runtime"] > h4["runtime"] and h32["mem_mb"] > h4["mem_mb"]
    assert resources.data_minutes(cfg, {"family": "PF13354"}) > resources.data_minutes(
        small, {"family": "PF00014_2000"})
    # a file that cannot be read plans its jobs at the least (its data job stops with one line:
    # tests/test_workflow_proteins.py)
    broken = tmp_path / "broken.fasta.gz"
    broken.write_bytes(gzip.compress(b">a\nACDE\n")[:12])
    for path in (broken, tmp_path / "missing.fasta"):
        small["proteins"]["families"][0]["alignment"] = str(path)
        assert resources.family_size(small, "PF00014_2000") == (1, 1)
        assert data.resources(small, {"family": "PF00014_2000"})["runtime"] == 1


def test_the_memory_estimates_bound_the_committed_families_run():
    """Every job of the committed families run (config/proteins_families.yaml: M = 2000 and
    3000, above most of the benchmark's rows) peaked below the memory the registry asks for it.
    (Its wall times are no check of the runtimes: its jobs shared two cores, two at a time.)"""
    cfg = preset("config.yaml", "config/proteins_families.yaml")
    costs = pd.read_csv(FAMILIES / "proteins-costs.csv")
    parts = costs["job"].str.split("/")
    run = set(parts.str[1][(parts.str[0] == "proteins") & (parts.str[1] != "tables")])
    assert run <= {family["name"] for family in cfg["proteins"]["families"]}  # the run's families
    checked = 0
    for job in costs.itertuples():
        parts = job.job.split("/")
        if parts[0] != "proteins" or parts[1] == "tables":
            continue
        if parts[2] == "data":
            rule, wildcards = STUDY.rule("protein_data"), {"family": parts[1]}
        else:
            rule, wildcards = STUDY.rule("protein_fit"), {"family": parts[1], "model": parts[3]}
        assert rule.resources(cfg, wildcards)["mem_mb"] >= job.max_rss_mb, job
        checked += 1
    held = json.loads((FAMILIES / "proteins-source.json").read_text())["realisations"][0]
    assert checked == len(run) * (1 + held * 4)  # a data job and each merged split's 4 models


def test_the_constants_are_the_fit_of_the_benchmark_csv():
    """``resources.py`` holds what ``benchmarks/fit_protein_resources.py`` prints from the CSV."""
    done = subprocess.run([sys.executable, str(FIT)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    source = (ROOT / "workflow_lib" / "studies" / "proteins" / "resources.py").read_text()
    assert done.stdout in source
