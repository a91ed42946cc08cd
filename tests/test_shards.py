"""Shards: a run cut into ranges of realisations (config key ``shard``), each run and snapshotted
on its own, merged into one snapshot with the whole run's tables."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.workflow_runs import (
    TINY,
    TINY_ALL,
    clone,
    copy_env,
    registered,
    repo_copy,
    snakemake,
    snakemake_in,
    write_config,
)
from workflow_lib.claims.statistics import rounded
from workflow_lib.core.config import load_config
from workflow_lib.core.errors import ConfigError, ShardError
from workflow_lib.core.realisations import realisations, snapshot_name
from workflow_lib.core.studies import studies
from workflow_lib.pages.results import read_claims, results_page
from workflow_lib.shards.snapshots import merge_shards, shared_table

# measured durations: the only columns in which a shard's tables may differ from the whole run's
TIMES = ("seconds", "wall_seconds", "steps_per_second")
SHARDED = [study for study in studies() if study.realisations]


def _docs(wd: Path, docs: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m workflow_lib docs --preset tiny --docs DOCS ARGS`` in the workflow ``wd`` (a
    copy, or the repository)."""
    cmd = [sys.executable, "-m", "workflow_lib", "docs", "--preset", "tiny", "--docs", str(docs),
           *args]
    return subprocess.run(cmd, cwd=wd, env=copy_env(wd), capture_output=True, text=True,
                          timeout=600)


def _shard(wd: Path, shard: str, docs: Path) -> set[str]:
    """Run shard ``shard`` of the tiny run in the workflow copy ``wd`` and snapshot it into
    ``docs``; returns the rules that ran."""
    (wd / "tiny.yaml").write_text(yaml.safe_dump({**TINY_ALL, "results": "results",
                                                  "shard": shard}))
    run = snakemake_in(wd)
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    snap = _docs(wd, docs, "--results", "results", "--configfile", "tiny.yaml")
    assert snap.returncode == 0, snap.stderr
    return set(re.findall(r"^(?:local)?rule (\w+):$", run.stdout + run.stderr, re.MULTILINE))


@pytest.fixture(scope="module")
def sharded(tiny_run, tmp_path_factory) -> Path:
    """The docs folder of the session's tiny run (``tiny_run``) in two shards, realisations 0
    and 1, each snapshotted after it ran, then merged into ``results/tiny``. Shard 0 runs in a
    copy of the whole run, where Snakemake finds every job of realisation 0 finished, its config
    slice and code unchanged: only the tables that lose realisation 1 and the manifest are
    rebuilt. Shard 1 runs from scratch in a fresh workflow copy."""
    root = tmp_path_factory.mktemp("sharded")
    docs = root / "docs"
    ran = _shard(clone(tiny_run, root / "whole"), "0-0", docs)
    assert ran == {"potts_tables", "protein_tables", "manifest", "all"}, ran
    fresh = repo_copy(root / "fresh")
    _shard(fresh, "1-1", docs)
    merge = _docs(ROOT, docs, "--merge")  # the pages read the repository's presets
    assert merge.returncode == 0, merge.stderr
    return docs


def test_a_shard_runs_its_realisations_alone(sharded):
    """Each shard holds its studies' realisations, none of another shard, and leaves out the
    studies without one in its range (the attention paths' single realisation is in shard 0)
    and without realisations (Omniglot)."""
    shards = sharded / "results" / "tiny" / "shards"
    held = {p.name: json.loads((p / "manifest.json").read_text())["realisations"]
            for p in shards.iterdir()}
    assert held == {"r0": {"potts_paper": [0], "attention_hmm": [0], "proteins": [0]},
                    "r1": {"potts_paper": [1], "proteins": [1]}}
    data = pd.read_csv(shards / "r1" / "tables" / "potts_paper" / "data.csv")
    assert data["realisation"].tolist() == [1]
    assert not (shards / "r1" / "tables" / "attention_hmm").exists()
    costs = pd.read_csv(shards / "r1" / "potts_paper-costs.csv")["job"]
    assert "potts/r1/samples" in set(costs) and not costs.str.contains("/r0").any()


def test_merged_shards_give_the_whole_runs_tables_and_claims(sharded, tiny_run):
    snap = sharded / "results" / "tiny"
    for study in SHARDED:
        for name in study.tables:
            merged = pd.read_csv(snap / "tables" / study.name / f"{name}.csv")
            whole = pd.read_csv(tiny_run / "results" / study.table_path(name))
            times = [c for c in TIMES if c in whole]
            pd.testing.assert_frame_equal(merged.drop(columns=times), whole.drop(columns=times),
                                          check_exact=True, obj=f"{study.name}/{name}")
        merged, whole = (read_claims(p) for p in (snap / f"{study.name}-claims.csv",
                                                  tiny_run / "results" / study.claims))
        started = merged["id"] == "run.started"  # the merge's own check: every shard has tables
        held = {"potts_paper": 2, "attention_hmm": 1, "proteins": 2}[study.name]  # r0 and r1
        assert merged.loc[started, ["n", "verdict"]].values.tolist() == [[held, "holds"]]
        assert rounded(merged[~started].reset_index(drop=True)).equals(rounded(whole)), study.name
        costs = pd.read_csv(snap / f"{study.name}-costs.csv")
        assert costs["job"].is_unique and (costs["wall_s"] > 0).all()
    check = subprocess.run([sys.executable, "-m", "workflow_lib", "claims", str(snap), "--check"],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    page = (sharded / "results" / "potts_paper-tiny.md").read_text()
    assert "in the shards r0, r1 (realisations 0-1: 2 of the run's 2), merged by" in page
    assert (snap / "figures" / "fig2a.png").stat().st_size > 1000


def test_a_shard_of_another_config_is_refused_with_one_line(sharded, tmp_path):
    run = tmp_path / "docs" / "results" / "tiny"
    shutil.copytree(sharded / "results" / "tiny", run)
    path = run / "shards" / "r1" / "manifest.json"
    record = json.loads(path.read_text())
    record["config"]["training"]["epochs"] += 1
    path.write_text(json.dumps(record))
    before = (run / "tables" / "potts_paper" / "data.csv").read_bytes()
    out = subprocess.run([sys.executable, "-m", "workflow_lib", "docs", "--preset", "tiny",
                          "--merge", "--docs", str(tmp_path / "docs")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "error: shards/r1: config key training.epochs = 5 differs from shards/r0's 4; the "
        "shards of potts_paper share every key it reads but shard and results"]
    assert (run / "tables" / "potts_paper" / "data.csv").read_bytes() == before  # no write


def test_a_shard_that_differs_in_another_studys_section_merges(sharded, tmp_path):
    """A study's shards are compared on the keys it reads (the shared ones and its sections):
    a key of the protein study's section set apart in shard r1 refuses that study alone."""
    run = tmp_path / "tiny"
    shutil.copytree(sharded / "results" / "tiny", run)
    path = run / "shards" / "r1" / "manifest.json"
    record = json.loads(path.read_text())
    record["config"]["proteins"]["max_iter"] += 1
    path.write_text(json.dumps(record))
    assert merge_shards(run, only=("potts_paper",)) == ["potts_paper"]
    with pytest.raises(ShardError, match=r"^shards/r1: config key proteins\.max_iter = \d+ "
                                         r"differs from shards/r0's \d+; the shards of proteins "):
        merge_shards(run)


def test_a_realisation_in_two_shards_is_refused(sharded, tmp_path):
    run = tmp_path / "tiny"
    shutil.copytree(sharded / "results" / "tiny", run)
    shutil.copytree(run / "shards" / "r0", run / "shards" / "r0-again")
    with pytest.raises(ShardError, match=r"^shards/r0-again: realisation 0 of potts_paper is "
                                         r"also in shards/r0; each realisation belongs to one "
                                         r"shard$"):
        merge_shards(run)
    shutil.rmtree(run / "shards" / "r0")
    shutil.rmtree(run / "shards" / "r0-again")
    with pytest.raises(ShardError, match=r"^shards: no shard holds realisations 0 of "
                                         r"potts_paper, below 1 \(realisations = 2\); the "
                                         r"shards merge from realisation 0 on without a gap"):
        merge_shards(run)


def test_shards_so_far_merge_into_a_run_of_fewer_realisations(sharded, tmp_path):
    """Shards 0 to k - 1 merge before the rest have run: the tables hold those realisations, the
    claims count them, and the page says how many of the run's they are and that its verdicts
    are interim (a complete run's page does not)."""
    run = tmp_path / "tiny"
    shutil.copytree(sharded / "results" / "tiny", run)
    shutil.rmtree(run / "shards" / "r1")
    merge_shards(run)
    data = pd.read_csv(run / "tables" / "potts_paper" / "data.csv")
    assert data["realisation"].tolist() == [0]
    source = json.loads((run / "potts_paper-source.json").read_text())
    assert source["shards"] == ["r0"] and source["realisations"] == [1, 2]
    study = next(s for s in SHARDED if s.name == "potts_paper")
    page = results_page(run, study, "tiny")
    assert "(realisations 0-0: 1 of the run's 2)" in page
    assert "These verdicts are interim: the run has 1 of its 2 realisations" in page
    assert "interim" not in results_page(sharded / "results" / "tiny", study, "tiny")


def test_a_shard_of_some_studies_lands_beside_the_others_of_its_range(sharded, tmp_path):
    """``shard_studies`` runs some studies of a shard alone; their snapshot is named after them,
    so that the range's other studies land beside it, and the merge takes each from its own."""
    run = tmp_path / "tiny"
    shutil.copytree(sharded / "results" / "tiny", run)
    whole = run / "shards" / "r1"
    for names in (["potts_paper"], ["proteins"]):
        part = run / "shards" / snapshot_name("1-1", names)
        shutil.copytree(whole, part)
        record = json.loads((part / "manifest.json").read_text())
        record["shard_studies"] = names
        record["realisations"] = {n: record["realisations"][n] for n in names}
        record["code"] = {n: record["code"][n] for n in names}
        (part / "manifest.json").write_text(json.dumps(record))
    shutil.rmtree(whole)
    assert snapshot_name("1-1", ["proteins", "potts_paper"]) == "r1.potts_paper+proteins"
    merged = merge_shards(run)
    assert set(merged) == {s.name for s in SHARDED}
    source = json.loads((run / "potts_paper-source.json").read_text())
    assert source["shards"] == ["r0", "r1.potts_paper"]


def test_a_failed_realisation_is_recorded_counted_and_listed(sharded, tmp_path):
    """A realisation whose stage reports an error (here: its couplings file damaged, so that
    its sampling stage cannot read it) is recorded by ``docs --failed``, not dropped: the merge
    counts it as started (no gap), leaves it out of the tables and the claims, and the check
    ``run.started`` and the page name it; a shard with a realisation that did not fail is
    refused with one line."""
    wd = clone(sharded.parent / "fresh", tmp_path / "wd")  # shard 1-1, finished
    couplings = wd / "results" / "potts" / "r1" / "couplings.h5"
    couplings.write_bytes(b"not an HDF5 file")
    failed = snakemake_in(wd)
    assert failed.returncode != 0
    last = (wd / "results" / "logs" / "potts" / "r1" / "samples.log").read_text().splitlines()[-1]
    assert last.startswith("error: ") and "couplings.h5" in last, last
    docs = tmp_path / "docs"
    shutil.copytree(sharded / "results" / "tiny", docs / "results" / "tiny")
    shutil.rmtree(docs / "results" / "tiny" / "shards" / "r1")
    mixed = _docs(wd, docs, "--results", "results", "--configfile", "tiny.yaml",
                  "--failed", "0-1", "--study", "potts_paper")
    assert mixed.returncode == 2 and mixed.stderr.splitlines() == [
        "error: results: no job of potts_paper in realisations 0 ends its log in an error "
        "line; --failed records a shard whose every realisation failed in a stage that said "
        "why: run it, or cut the realisations that finish into shards of their own (--study "
        "names the studies whose realisations failed)"]
    elsewhere = _docs(wd, docs, "--results", "results/potts", "--configfile", "tiny.yaml",
                      "--failed", "1-1", "--study", "potts_paper")
    assert elsewhere.returncode == 2 and elsewhere.stderr.splitlines() == [
        "error: --results results/potts: the config's results folder is results; give the "
        "config files (and keys) the failed run was given"]
    snap = _docs(wd, docs, "--results", "results", "--configfile", "tiny.yaml",
                 "--failed", "1-1", "--study", "potts_paper")
    assert snap.returncode == 0, snap.stderr
    shard = docs / "results" / "tiny" / "shards" / "r1.potts_paper"
    record = json.loads((shard / "manifest.json").read_text())
    assert record["realisations"] == {"potts_paper": [1]} and not (shard / "tables").exists()
    assert record["failed"]["potts_paper"]["1"] == "potts/r1/samples: " + last[len("error: "):]
    run = docs / "results" / "tiny"
    assert merge_shards(run, only=("potts_paper",)) == ["potts_paper"]
    data = pd.read_csv(run / "tables" / "potts_paper" / "data.csv")
    assert data["realisation"].tolist() == [0]
    claims = read_claims(run / "potts_paper-claims.csv").set_index("id")
    assert claims.loc["run.started", ["n", "verdict"]].tolist() == [2, "does not hold"]
    assert claims.loc["run.started", "statement"].endswith("(failed: r1)")
    assert claims.loc["data.held_out", "n"] == 1  # the claims are on realisation 0
    source = json.loads((run / "potts_paper-source.json").read_text())
    assert source["realisations"] == [2, 2] and set(source["failed"]) == {"1"}
    check = subprocess.run([sys.executable, "-m", "workflow_lib", "claims", str(run), "--check"],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    page = results_page(run, SHARDED[0], "tiny")
    assert "started but failed, so without tables and left out of the claims" in page
    assert "realisation 1 (`potts/r1/samples: " in page


@pytest.mark.parametrize(("extra", "message"), [
    ({"shard_studies": ["potts_paper"]},
     'shard_studies = ["potts_paper"]: only with shard (FIRST-LAST); null for a whole run'),
    ({"shard": "0-0", "shard_studies": ["omniglot"]},
     'shard_studies.0 = "omniglot": must be one of "potts_paper", "attention_hmm", "proteins"'),
])
def test_shard_studies_outside_a_shard_are_refused_with_one_line(extra, message):
    with pytest.raises(ConfigError) as caught:
        load_config({**TINY, **extra})
    assert str(caught.value) == message


@pytest.mark.parametrize(("shard", "compute", "message"), [
    ("0-3", {}, 'shard = "0-3": must lie within realisations 0-2, the most of any study '
                "(realisations = 2, paths.realisations = 1, proteins.realisations = 3)"),
    ("1-0", {}, 'shard = "1-0": FIRST must not exceed LAST'),
    ("1-1", {"realisations_per_job": 2},
     'shard = "1-1": compute.realisations_per_job = 2 runs realisations 0-1, 2-3, ... of rule '
     "potts_train side by side in one job each; a shard must start and end on those bounds, as "
     "the whole run's jobs"),
    ("0_1", {}, 'shard = "0_1": must be string or null matching ^[0-9]+-[0-9]+$'),
])
def test_a_shard_outside_the_run_is_refused_with_one_line(shard, compute, message):
    with pytest.raises(ConfigError) as caught:
        load_config({**TINY, "shard": shard, "compute": {**TINY["compute"], **compute}})
    assert str(caught.value) == message


def test_a_shared_table_merges_across_library_builds_but_not_across_configs(tmp_path):
    """The replica theory's table, computed again by every shard, merges when a shard's copy
    differs in the last digits (another build of NumPy or SciPy: about 1e-14 relative) and is
    refused, naming the shard, the table and the column, when it differs as a changed config
    would make it."""
    table = pd.DataFrame({"alpha": [0.5, 1.0, 2.0], "source": ["theory"] * 3,
                          "eps": [0.31, 0.12, 0.0], "n": [4, 4, 4]})
    folders = []
    for name, eps in (("shards/r0", table["eps"]), ("shards/r1", table["eps"] * (1 + 3e-14)),
                      ("shards/r2", table["eps"] + [0.0, 0.0, 1e-16])):
        folder = tmp_path / name
        folder.mkdir(parents=True)
        table.assign(eps=eps).to_csv(folder / "replica.csv", index=False)
        folders.append((name, folder))
    merged = shared_table("potts_paper", "replica", folders)
    pd.testing.assert_frame_equal(merged, pd.read_csv(folders[0][1] / "replica.csv"))
    for column, change in (("eps", table["eps"] * (1 + 1e-6)), ("n", [4, 4, 5])):
        table.assign(**{column: change}).to_csv(folders[2][1] / "replica.csv", index=False)
        with pytest.raises(ShardError) as caught:
            shared_table("potts_paper", "replica", folders)
        assert str(caught.value).startswith(
            f"shards/r2: table potts_paper/replica.csv differs from shards/r0's in column "
            f"{column}; ")
    table.drop(columns="n").to_csv(folders[1][1] / "replica.csv", index=False)
    with pytest.raises(ShardError, match=r"^shards/r1: .* in its columns; "):
        shared_table("potts_paper", "replica", folders)


def test_a_shard_keeps_each_studys_realisation_ids():
    cfg = load_config({**TINY, "realisations": 6, "paths": {"realisations": 3},
                       "compute": {"realisations_per_job": 2}, "shard": "2-5"})
    assert {s.name: realisations(cfg, s) for s in SHARDED} == {
        "potts_paper": [2, 3, 4, 5], "attention_hmm": [2], "proteins": [2]}
    alone = load_config({**TINY, "realisations": 6, "shard": "2-5",
                         "shard_studies": ["potts_paper"]})
    assert {s.name: realisations(alone, s) for s in SHARDED} == {
        "potts_paper": [2, 3, 4, 5], "attention_hmm": [], "proteins": []}
    proteins = load_config({**TINY, "realisations": 6, "compute": {"realisations_per_job": 3},
                            "shard": "1-1", "shard_studies": ["proteins"]})  # no Potts chunk
    assert {s.name: realisations(proteins, s) for s in SHARDED} == {
        "potts_paper": [], "attention_hmm": [], "proteins": [1]}
    whole = load_config({**TINY, "realisations": 6})
    assert realisations(whole, SHARDED[0]) == list(range(6))


def test_a_shard_of_the_proteins_runs_in_the_default_target(tmp_path):
    """A shard that names the proteins in ``shard_studies`` plans their tables and the manifest
    in the default target, whether or not ``proteins.enabled``; the study's own target, whose
    claims and figures need every realisation, is refused in a shard with one line that says
    what to run instead (dry runs)."""
    proteins = {**TINY_ALL["proteins"], "enabled": False}
    config = write_config(tmp_path, {**TINY_ALL, "proteins": proteins, "shard": "1-1",
                                     "shard_studies": ["proteins"]})
    plan = snakemake(tmp_path, config, "--dry-run")
    assert plan.returncode == 0, (plan.stdout + plan.stderr)[-3000:]
    jobs = {registered(name)
            for name in re.findall(r"^(?:local)?rule (\w+):$", plan.stdout, re.MULTILINE)}
    assert {"protein_fit", "protein_tables", "manifest"} <= jobs
    assert not jobs & {"protein_claims", "protein_figure", "potts_sample", "paths_sample"}
    refused = snakemake(tmp_path, config, "proteins", "--dry-run")
    assert refused.returncode != 0
    assert ('shard = "1-1": a shard runs the default target, not `proteins` (its claims and '
            "figures need every realisation): drop `proteins` and name the study in "
            "shard_studies, e.g. --config shard=1-1 'shard_studies=[\"proteins\"]'"
            ) in refused.stdout + refused.stderr
