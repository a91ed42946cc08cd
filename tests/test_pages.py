"""Results pages and the report's front page: written from the run's claims tables, reproducible
from the committed snapshot, every claim on them."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.workflow_runs import clone, snakemake_in
from workflow_lib.core.studies import studies
from workflow_lib.pages.results import cost_by_kind, results_page, snapshot, write_docs
from workflow_lib.runtime import job_cpu

SNAPSHOTS = sorted(p for p in (ROOT / "docs" / "results").glob("*") if p.is_dir())


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_committed_pages_are_what_the_command_writes_from_the_snapshot(snap):
    for study in studies():
        page = ROOT / "docs" / "results" / f"{study.name}-{snap.name}.md"
        if (snap / f"{study.name}-claims.csv").exists():
            assert page.read_text() == results_page(snap, study, snap.name), (
                f"{page.name} is stale: python -m workflow_lib docs --preset {snap.name}")


def test_index_and_configuration_are_regenerated_unchanged(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    for snap in SNAPSHOTS:
        write_docs(docs, snap.name)
    for name in ("results/README.md", "configuration.md", "performance.md", "pipeline.md",
                 "usage.md", "proteins.md"):
        assert (docs / name).read_text() == (ROOT / "docs" / name).read_text(), name


def test_docs_command_writes_a_page_per_study_with_every_claim(tiny_run, tmp_path):
    docs = tmp_path / "docs"
    run = subprocess.run([sys.executable, "-m", "workflow_lib", "docs", "--preset", "tiny",
                          "--results", str(tiny_run / "results"), "--configfile", "tiny.yaml",
                          "--docs", str(docs)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for study in studies():
        claims = pd.read_csv(tiny_run / "results" / study.claims)
        page = (docs / "results" / f"{study.name}-tiny.md").read_text()
        assert all(f"| {claim} |" in page for claim in claims["id"]), study.name
        for panel in study.panels:
            if (tiny_run / "results" / "figures" / f"{panel.name}.png").exists():
                assert (docs / "results" / "tiny" / "figures" / f"{panel.name}.png").exists()
    assert "tiny" in (docs / "results" / "README.md").read_text()


def _claims_command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workflow_lib", "claims", *args],
                          capture_output=True, text=True, timeout=300)


def test_two_snapshots_side_by_side_name_each_verdict_and_each_change(tmp_path):
    """``claims NEW --against OLD`` prints every row of both tables with the verdict each table
    gives it, marks a row changed exactly when the two verdicts differ (or one table lacks it),
    writes nothing, and names the fix when the folders share no study."""
    from workflow_lib.pages.verdicts import read_claims

    old, new = ROOT / "docs" / "results" / "quick", ROOT / "docs" / "results" / "quick_identity"
    before = {p: p.read_bytes() for p in new.glob("*-claims.csv")}
    run = _claims_command(str(new), "--against", str(old))
    assert run.returncode == 0, run.stderr
    assert {p: p.read_bytes() for p in new.glob("*-claims.csv")} == before
    a = read_claims(old / "potts_paper-claims.csv").set_index("id")
    b = read_claims(new / "potts_paper-claims.csv").set_index("id")
    rows = {line.split(" | ")[0][3:-1]: line.split(" | ")
            for line in run.stdout.splitlines() if line.startswith("| `")}
    assert set(rows) >= set(a.index) | set(b.index)
    for i in set(a.index) & set(b.index):
        cells = rows[i]
        assert f"**{a.loc[i, 'verdict']}**" in cells[2] and f"**{b.loc[i, 'verdict']}**" in cells[3]
        assert cells[4].rstrip(" |").split(";")[0] == (
            "same" if a.loc[i, "verdict"] == b.loc[i, "verdict"] else "changed"), i
    assert any(r[4].startswith("changed") for r in rows.values())
    assert any(r[4].startswith("same") for r in rows.values())
    gated = b[b["gated_by"].notna()].index
    assert all("gated by" in rows[i][3] for i in gated)

    shutil.copytree(new, tmp_path / "new")
    dropped = read_claims(new / "potts_paper-claims.csv").iloc[1:]
    dropped.to_csv(tmp_path / "new" / "potts_paper-claims.csv", index=False)
    run = _claims_command(str(tmp_path / "new"), "--against", str(old))
    first = next(line for line in run.stdout.splitlines()
                 if line.startswith(f"| `{b.index[0]}` |"))
    assert first.split(" | ")[3] == "—" and first.endswith("| changed |")

    from workflow_lib.pages.verdicts import verdict_changes

    retested = read_claims(new / "potts_paper-claims.csv")
    retested.loc[0, "test"] = "another test"
    line = verdict_changes(read_claims(new / "potts_paper-claims.csv"), retested).splitlines()[2]
    assert line.endswith("| same; test changed |"), line
    with pytest.raises(ValueError, match="repeats the ids"):
        verdict_changes(pd.concat([retested, retested.iloc[:1]]), retested)

    empty = tmp_path / "empty"
    empty.mkdir()
    run = _claims_command(str(new), "--against", str(empty))
    assert run.returncode == 2 and "share no study's claims table" in run.stderr


def test_a_snapshot_recomputes_its_claims_and_a_doctored_table_turns_a_verdict(tiny_run,
                                                                              tmp_path):
    docs = tmp_path / "docs"
    run = subprocess.run([sys.executable, "-m", "workflow_lib", "docs", "--preset", "tiny",
                          "--results", str(tiny_run / "results"), "--docs", str(docs)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    snap = docs / "results" / "tiny"
    check = _claims_command(str(snap), "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("identical") == sum(
        (snap / f"{s.name}-claims.csv").exists() for s in studies())
    # factored attention's map doctored into a poor copy of J in every realisation
    final = snap / "tables" / "potts_paper" / "training_final.csv"
    table = pd.read_csv(final)
    factored = table["arch"] == "factored"
    table.loc[factored, "adam_pearson_r"] = 0.2 + 0.01 * table.loc[factored, "realisation"]
    table.to_csv(final, index=False)
    assert _claims_command(str(snap), "--check").returncode == 1
    assert _claims_command(str(snap)).returncode == 0
    claims = pd.read_csv(snap / "potts_paper-claims.csv").set_index("id")
    assert claims.loc["fig2b.copy", "verdict"] == "does not hold"
    # one realisation left: every paired test is not resolved
    table[table["realisation"] == 0].to_csv(final, index=False)
    assert _claims_command(str(snap)).returncode == 0
    claims = pd.read_csv(snap / "potts_paper-claims.csv").set_index("id")
    assert claims.loc["fig2b.copy", "verdict"] == "not resolved"


def test_report_front_page_holds_every_claim(tiny_run, tmp_path):
    wd = clone(tiny_run, tmp_path / "wf")
    run = snakemake_in(wd, "--report", "report.html")
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    html = (wd / "report.html").read_text()
    for study in studies():
        for claim in pd.read_csv(wd / "results" / study.claims)["id"]:
            assert claim in html, (study.name, claim)


BENCHMARK = ("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\t"
             "cpu_time\n{s}\t0:00:01\t{rss}\t1.0\t1.0\t1.0\t0.0\t0.1\t50.0\t{cpu}\n")


def test_a_results_page_shows_its_page_tables_and_measured_job_costs(tmp_path):
    """The protein page holds its family_models table whole and one row per job benchmark of
    the study (not another study's), with the totals."""
    study = {s.name: s for s in studies()}["proteins"]
    results = tmp_path / "results"
    (results / "proteins" / "tables").mkdir(parents=True)
    (results / study.claims).write_text(
        "id,kind,study,figure,statement,paper,measured,error,n,unit,test,statistic,p,p_exact,"
        "criterion,verdict\nproteins.x,claim,proteins,f,s,,0.1,0.01,4,family,t,1,0.01,,c,holds\n")
    for name in study.tables:
        (results / study.table_path(name)).write_text("x\n1\n")
    (results / "proteins" / "tables" / "family_models.csv").write_text(
        "family,model,P@L,P@k_random,contacts\nA,plmdca,0.8125,0.3333,d < 8 Å\n")
    for job, seconds, rss, cpu in (("proteins/A/r0/plmdca", 12.5, 300.0, 11.0),
                                   ("proteins/A/data", 2.0, 100.0, 1.5),
                                   ("figures/protein_precision", 3.0, 150.0, 2.0),
                                   ("potts/other", 99.0, 999.0, 99.0)):
        path = results / "benchmarks" / f"{job}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BENCHMARK.format(s=seconds, rss=rss, cpu=cpu))
    log = results / "logs" / "proteins" / "A" / "r0" / "plmdca.log"  # the job's own measurement
    log.parent.mkdir(parents=True)
    log.write_text("fitting\n" + job_cpu.LINE.format(12.25) + "\n")
    snap = tmp_path / "snap"
    assert snapshot(results, snap, study, {})
    page = results_page(snap, study, "mine")
    assert "| A | plmdca | 0.812 | 0.333 | d < 8 Å |" in page
    assert "3 jobs; the sum of their wall times 18 s, the longest 12 s" in page
    assert "| proteins/A/r0/plmdca | 12.5 | 12.25 | 300 |" in page  # its log's, not sampled
    assert "| proteins/A/data | 2.0 | 1.5 | 100 |" in page  # no log line: Snakemake's sample
    assert "| figures/protein_precision | 3.0 |" in page and "potts/other" not in page


def test_costs_are_summed_per_kind_of_job():
    """A realisation or chunk segment (``r3``, ``r0-9``) of a job's path reads ``r*``; nothing
    else of the path does."""
    costs = pd.DataFrame({
        "job": ["train/vanilla3/r0-1", "train/vanilla3/r2", "potts/r0/samples",
                "potts/r1/samples", "theory/replica_theory", "proteins/PF1_r2/r0/plmdca"],
        "wall_s": [10.0, 4.0, 1.0, 3.0, 2.0, 5.0], "cpu_s": [9.0, 3.0, 1.0, 2.0, 1.0, 4.0],
        "max_rss_mb": [1.0] * 6})  # fmt: skip
    got = cost_by_kind(costs).set_index("kind")
    assert got.index.tolist() == ["train/vanilla3/r*", "potts/r*/samples",
                                  "theory/replica_theory", "proteins/PF1_r2/r*/plmdca"]
    assert got.loc["train/vanilla3/r*"].tolist() == [2, 14.0, 10.0, 12.0, 3]
    assert got["realisations"].tolist() == [3, 2, 0, 1]
    assert got.loc["potts/r*/samples", "jobs"] == 2 and got.loc["potts/r*/samples", "wall_s"] == 4


def test_run_costs_sum_each_command_of_each_run(tmp_path):
    """docs/usage.md's costs: one row per committed run and the command of its studies (the
    studies of one command summed), its shards counted, times in minutes."""
    import json

    from workflow_lib.pages.run_costs import costs_markdown, run_costs

    def snap(run: str, study: str, source: dict, walls: list[float]) -> None:
        (tmp_path / run).mkdir(exist_ok=True)
        (tmp_path / run / f"{study}-source.json").write_text(json.dumps(source))
        pd.DataFrame({"job": [f"j{i}" for i in range(len(walls))], "wall_s": walls,
                      "cpu_s": [w / 2 for w in walls], "max_rss_mb": 1.0}).to_csv(
            tmp_path / run / f"{study}-costs.csv", index=False)

    snap("quick", "potts_paper", {"configs": [], "targets": []}, [60.0, 120.0])
    snap("quick", "attention_hmm", {"configs": [], "targets": []}, [30.0])
    snap("quick", "omniglot", {"configs": ["config.yaml"], "targets": ["omniglot"]}, [600.0])
    snap("paper", "potts_paper", {"configs": ["config/paper.yaml"], "shards": ["r0", "r1"]},
         [3600.0])
    rows = run_costs(tmp_path).set_index(["run", "command"])
    quick = rows.loc[("quick", "snakemake --cores all")]
    assert quick["studies"] == ["attention_hmm", "potts_paper"] and quick["jobs"] == 3
    assert (quick["job_s"], quick["cpu_s"], quick["longest_s"]) == (210.0, 105.0, 120.0)
    assert rows.loc[("quick", "snakemake --cores all omniglot --configfile config.yaml"),
                    "jobs"] == 1
    assert rows.loc[("paper", "snakemake --cores all --configfile config/paper.yaml"),
                    "shards"] == 2
    table = costs_markdown(tmp_path)
    assert ("| [quick](results/attention_hmm-quick.md) | `snakemake --cores all` | "
            "attention_hmm, potts_paper | 3 | 3.5 | 1.8 | 2.0 |") in table
    assert "`snakemake --cores all --configfile config/paper.yaml`, in 2 shards" in table


def test_the_index_says_what_a_verdict_is_and_states_each_claim_beside_its_id():
    """docs/results/README.md opens with what a verdict is and the default run's verdicts; each
    study's side-by-side table has a row per claim id of its runs, with the claim's statement as
    a run states it (and a note where the runs' words differ)."""
    from workflow_lib.pages.verdicts import read_claims

    page = (ROOT / "docs" / "results" / "README.md").read_text()
    assert page.index("**What a verdict is.**") < page.index("**The default run.**") < page.index(
        "\n- [")
    for word in ("**holds**", "**does not hold**", "**not resolved**", "`gated_by`"):
        assert word in page.split("**The default run.**", 1)[0], word
    rows = {}  # study -> claim id -> its statement cell
    for study in studies():
        section = page.split(f"## {study.title}: the verdicts side by side\n", 1)[1]
        rows[study.name] = {line.split(" | ")[0][2:]: line.split(" | ")[1]
                            for line in section.split("\n\n", 1)[0].strip().splitlines()[2:]}
    for snap in SNAPSHOTS:
        for study in studies():
            if not (snap / f"{study.name}-claims.csv").exists():
                continue
            claims = read_claims(snap / f"{study.name}-claims.csv")
            for claim, statement in zip(claims["id"], claims["statement"], strict=True):
                shown = rows[study.name][claim].replace("\\|", "|")
                assert shown == statement or "the runs' words differ" in shown, claim
    assert "(as the paper run states it; the runs' words differ)" in rows["potts_paper"][
        "data.hamming"]
