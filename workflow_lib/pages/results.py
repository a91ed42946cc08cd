"""Pages written from a run's outputs: the results pages under ``docs/results/`` (the report's
front page is ``front_page``'s). Every number on them is read from a claims table or another
table the workflow wrote; nothing is typed.

``python -m workflow_lib docs --preset NAME [--results DIR --config FILE ...]`` copies a run's
claims tables, figures and measured job costs (Snakemake's benchmarks) into
``docs/results/NAME/`` (the committed snapshot) and writes
``docs/results/<study>-NAME.md`` from that snapshot, the index ``docs/results/README.md`` and
``docs/configuration.md``; without ``--results`` it rewrites the pages from the snapshot alone.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd

from workflow_lib.claims import calibration
from workflow_lib.claims.calibration import power_markdown
from workflow_lib.claims.statistics import ALPHA, CHECK, CLAIM, COLUMNS, EXACT_FROM, counted
from workflow_lib.claims.study import STARTED, claims_table
from workflow_lib.core.artefacts import write_csv
from workflow_lib.core.code_digest import module_digest
from workflow_lib.core.config import load_schema
from workflow_lib.core.registry import Study
from workflow_lib.core.studies import studies
from workflow_lib.pages.criteria import criteria_page
from workflow_lib.pages.landing import with_first_screen
from workflow_lib.pages.markers import between
from workflow_lib.pages.performance import BENCHMARKS_DIR, performance_page
from workflow_lib.pages.presets import preset_configs, with_preset_tables
from workflow_lib.pages.reference import configuration_page
from workflow_lib.pages.run_costs import run_command, with_run_costs
from workflow_lib.pages.stage_tables import SNAKEFILE, with_stage_tables
from workflow_lib.pages.verdicts import (
    default_runs,
    error_text,
    read_claims,
    verdict_counts,
    verdict_meaning,
)
from workflow_lib.runtime import job_cpu


def _number(x: float) -> str:
    return "" if pd.isna(x) else f"{x:.4g}"


def _p(row: pd.Series) -> str:
    """``p = 0.003 (exact 0.125)``, or empty for a test without a p-value."""
    if pd.isna(row["p"]):
        return ""
    exact = "" if pd.isna(row["p_exact"]) else f" (exact {row['p_exact']:.3g})"
    return f"{row['p']:.3g}{exact}"


def claim_cells(row: pd.Series) -> list[str]:
    """The cells of one row for a page: id, figure, statement, paper, measured +- error
    (n units), test (statistic), p (exact p), criterion, verdict."""
    error = error_text(row)
    paper = "" if pd.isna(row["paper"]) else str(row["paper"])
    statistic = "" if pd.isna(row["statistic"]) else f" = {row['statistic']:.3g}"
    return [str(row["id"]), str(row["figure"]), str(row["statement"]), paper,
            f"{_number(row['measured'])}{error} (n = {counted(int(row['n']), row['unit'])})",
            f"{row['test']}{statistic}", _p(row), str(row["criterion"]), str(row["verdict"])]


VERDICT_RULE = ("Each row's test was fixed before the data were seen and fits the claim's "
                "logic: paired one-sided t over its units with the exact signed-rank p beside it, "
                "two one-sided tests for an equivalence, Fisher z for a correlation, McNemar for "
                "paired episodes, an intersection-union test for a conjunction, every unit for a "
                f"protocol check; a claim holds when its one-sided p is below {ALPHA:g} (from "
                f"{EXACT_FROM} units on its exact p too; with fewer, no exact p can be that "
                "small and the t-test alone decides), does not hold when the opposite side's is; "
                "see [pipeline.md](../pipeline.md#claims-tables).")


HEADER = ["claim", "figure", "the paper says", "paper's number", "measured", "test", "p",
          "criterion", "verdict"]


def _markdown_table(claims: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for _, row in claims.iterrows():
        *cells, verdict = (c.replace("|", "\\|") for c in claim_cells(row))
        lines.append("| " + " | ".join([*cells, f"**{verdict}**"]) + " |")
    return "\n".join(lines)


def job_costs(results: Path, study: Study | None = None) -> pd.DataFrame:
    """The measured cost of every job of ``study`` (``None``: of every job) in the run in
    ``results``, read from the benchmark Snakemake wrote for it (``RESULTS/benchmarks/<folder>/
    **.tsv`` for the study's ``folders``, and its figures; the latest line of each): columns job
    (the benchmark's path without the extension), wall_s, cpu_s, max_rss_mb; sorted by job. cpu_s is
    the CPU time the job measured at its end, its log's last line (``RESULTS/logs/<job>.log``,
    ``workflow_lib.runtime.job_cpu``); for a job whose log lacks it (run by a version that did not
    write it), Snakemake's sampled ``cpu_time``, which misses up to 30 s of the job's end."""
    bench = results / "benchmarks"
    files = list(bench.rglob("*.tsv")) if study is None else [
        *(f for folder in study.folders or (study.name,) for f in (bench / folder).rglob("*.tsv")),
        *(bench / "figures" / f"{panel.name}.tsv" for panel in study.panels)]
    rows = []
    for path in sorted(f for f in files if f.is_file()):
        last = pd.read_csv(path, sep="\t").iloc[-1]
        job = path.relative_to(bench).with_suffix("").as_posix()
        measured = job_cpu.from_log(results / "logs" / f"{job}.log")
        rows.append({"job": job, "wall_s": last["s"],
                     "cpu_s": last["cpu_time"] if measured is None else measured,
                     "max_rss_mb": last["max_rss"]})
    return pd.DataFrame(rows, columns=["job", "wall_s", "cpu_s", "max_rss_mb"])


def _csv_markdown(df: pd.DataFrame) -> str:
    """A table as Markdown, numbers to 3 significant digits."""
    cell = lambda x: f"{x:.3g}" if isinstance(x, float) else str(x)  # noqa: E731
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(x).replace("|", "\\|") for x in row) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines)


REALISATION_IN_PATH = r"(?<![^/])r(\d+)(?:-(\d+))?(?![^/])"
"""A realisation (``r3``) or a chunk of realisations (``r0-9``) as one part of a job's path."""


def job_realisations(job: str) -> set[int]:
    """The realisations a job's path names (``r3``, or ``r0-9`` for ten)."""
    found: set[int] = set()
    for m in re.finditer(REALISATION_IN_PATH, job):
        found |= set(range(int(m[1]), int(m[2] or m[1]) + 1))
    return found


def realisations_in(jobs: pd.Series) -> int:
    """How many realisations the job paths ``jobs`` name (``job_realisations``)."""
    return len(set().union(*map(job_realisations, jobs)))


def cost_by_kind(costs: pd.DataFrame) -> pd.DataFrame:
    """``costs`` (``job_costs``) summed over realisations: one row per kind of job (its path with
    each realisation or chunk, ``r3`` or ``r0-9``, as ``r*``) with columns kind, jobs, wall_s
    (summed), longest_s, cpu_s (summed) and realisations (how many its jobs cover; 0 for a kind
    without one); in order of first appearance."""
    kind = costs["job"].str.replace(REALISATION_IN_PATH, "r*", regex=True)
    grouped = costs.assign(kind=kind).groupby("kind", sort=False)
    return pd.DataFrame({"jobs": grouped.size(), "wall_s": grouped["wall_s"].sum(),
                         "longest_s": grouped["wall_s"].max(),
                         "cpu_s": grouped["cpu_s"].sum(),
                         "realisations": grouped["job"].agg(realisations_in)}).reset_index()


def _costs_section(costs: pd.DataFrame) -> list[str]:
    """The Markdown lines of a run's measured job costs (``job_costs``): summed per kind of job
    (``cost_by_kind``), then job by job."""
    lines = ["## Measured costs", "",
             f"{len(costs)} jobs; the sum of their wall times {costs['wall_s'].sum():.0f} s, the "
             f"longest {costs['wall_s'].max():.0f} s, the largest memory "
             f"{costs['max_rss_mb'].max():.0f} MB; from Snakemake's benchmark of each job on the "
             "machine of the run (its CPU and load are not recorded). The CPU time is the job's "
             "own measurement at its end; a job that did not write one (a run made before jobs "
             "measured it) has Snakemake's sample, which misses up to 30 s of the job's end. Per "
             "kind of job, summed over realisations:", "",
             "| job | jobs | wall (s) | longest (s) | CPU (s) |", "|---|---|---|---|---|"]
    lines += [f"| {r.kind} | {r.jobs} | {r.wall_s:.1f} | {r.longest_s:.1f} | {_number(r.cpu_s)} |"
              for r in cost_by_kind(costs).itertuples()]
    lines += ["", "Job by job:", "",
              "| job | wall (s) | CPU (s) | max RSS (MB) |", "|---|---|---|---|"]
    lines += [f"| {r.job} | {r.wall_s:.1f} | {_number(r.cpu_s)} | {_number(r.max_rss_mb)} |"
              for r in costs.itertuples()]
    return [*lines, ""]


def snapshot(results: Path, dest: Path, study: Study, source: dict) -> bool:
    """Replace ``study``'s files in the snapshot ``dest`` (its claims table, the tables it was
    computed from under ``tables/<study>/``, its figures as PNG, its jobs' measured costs, the
    run's config files) with those of the run in ``results``; False when the run has no claims
    table for it."""
    claims = results / study.claims
    if not claims.exists():
        return False
    (dest / "figures").mkdir(parents=True, exist_ok=True)
    costs = job_costs(results, study)
    (dest / f"{study.name}-costs.csv").unlink(missing_ok=True)
    if len(costs):
        costs.to_csv(dest / f"{study.name}-costs.csv", index=False)
    for panel in study.panels:
        (dest / "figures" / f"{panel.name}.png").unlink(missing_ok=True)
        png = results / "figures" / f"{panel.name}.png"
        if png.exists():
            shutil.copy2(png, dest / "figures" / png.name)
    tables = dest / "tables" / study.name
    shutil.rmtree(tables, ignore_errors=True)
    tables.mkdir(parents=True)
    for name in study.tables:
        shutil.copy2(results / study.table_path(name), tables / f"{name}.csv")
    shutil.copy2(claims, dest / f"{study.name}-claims.csv")
    (dest / f"{study.name}-source.json").write_text(
        json.dumps(source, indent=1, sort_keys=True) + "\n")
    return True


def recompute_claims(snap: Path, study: Study) -> str:
    """The claims table of ``study`` recomputed from the tables in the snapshot ``snap`` alone,
    as the workflow writes it, with ``run.started`` where the snapshot was merged from shards
    (``study_claims.started_check``; CSV text)."""
    folder = snap / "tables" / study.name
    missing = [n for n in study.tables if not (folder / f"{n}.csv").exists()]
    if missing:
        raise FileNotFoundError(f"{folder}: no {', '.join(missing)} table; snapshot the run "
                                f"again with: python -m workflow_lib docs --preset {snap.name} "
                                "--results RESULTS")
    tables = {n: pd.read_csv(folder / f"{n}.csv") for n in study.tables}
    started = folder / f"{STARTED}.csv"  # a run merged from shards
    return claims_table(study, tables, pd.read_csv(started, keep_default_na=False)
                        if started.exists() else None).to_csv(index=False)


def _section(claims: pd.DataFrame, kind: str, title: str) -> list[str]:
    rows = claims[claims["kind"] == kind]
    return [f"### {title}", "", _markdown_table(rows), ""] if len(rows) else []


def results_page(snapshot_dir: Path, study: Study, preset: str) -> str:
    """The Markdown page of ``study`` on the run of ``preset`` from its snapshot."""
    claims = read_claims(snapshot_dir / f"{study.name}-claims.csv")
    source = json.loads((snapshot_dir / f"{study.name}-source.json").read_text())
    produced, interim = f"`{run_command(source)}`", ""
    if "shards" in source:  # merged from shards (workflow_lib.shards.snapshots)
        held, planned = source["realisations"]
        produced = (f"`{run_command(source)} --config shard=FIRST-LAST` in the shards "
                    f"{', '.join(source['shards'])} (realisations 0-{held - 1}: {held} of the "
                    f"run's {planned}), merged by `python -m workflow_lib docs --preset {preset} "
                    "--merge`")
        if held < planned:
            interim = (f" These verdicts are interim: the run has {held} of its {planned} "
                       "realisations, each merge tests again as shards land, and a p near its "
                       "threshold may still cross it either way before the run is complete.")
    failed = source.get("failed", {})
    if failed:  # recorded by docs --failed (workflow_lib.shards.snapshots.snapshot_failed)
        produced += ("; started but failed, so without tables and left out of the claims "
                     "(check `run.started`): " + "; ".join(
                         f"realisation {r} (`{why}`)" for r, why in sorted(
                             failed.items(), key=lambda item: int(item[0]))))
    lines = [f"# {study.title}: the {preset} run", "",
             f"*{study.paper}.*", "",
             f"Produced by {produced}; this page by `python -m workflow_lib "
             f"docs --preset {preset}`. Every number below is read from the run's claims table "
             f"([{study.name}-claims.csv]({preset}/{study.name}-claims.csv)), which `python -m "
             f"workflow_lib claims docs/results/{preset}` recomputes from the tables beside it "
             f"([tables/{study.name}/]({preset}/tables/{study.name}/)).",
             "", "## Claims", "", verdict_counts(claims) + ". " + VERDICT_RULE + interim, "",
             *_section(claims, CLAIM, "The paper's claims"),
             *_section(claims, CHECK, "The protocol's checks"), "## Figures", ""]
    for panel in study.panels:
        png = snapshot_dir / "figures" / f"{panel.name}.png"
        if png.exists():
            lines += [f"![{panel.name}]({preset}/figures/{png.name})", "", panel.caption, ""]
    for name in study.page_tables:
        path = snapshot_dir / "tables" / study.name / f"{name}.csv"
        if path.exists():
            lines += [f"## Table `{name}`", "",
                      f"From [tables/{study.name}/{name}.csv]({preset}/tables/{study.name}/"
                      f"{name}.csv).", "", _csv_markdown(pd.read_csv(path)), ""]
    costs = snapshot_dir / f"{study.name}-costs.csv"
    if costs.exists():
        lines += _costs_section(pd.read_csv(costs))
    return "\n".join(lines)


def index_page(root: Path) -> str:
    """``docs/results/README.md``: what a verdict is, the default run's verdicts and why its
    claims are not resolved (``verdicts.default_runs``), every results page with its verdict
    counts (and, for a run merged from shards, how many of its realisations they hold), then per
    study each claim's statement and its verdict in every run side by side (the two readings of
    the protocol, the quick and the paper scale)."""
    default = default_runs(root, "", ids=True)
    lines = ["# Results", "", verdict_meaning(".."), "", *([default, ""] if default else []),
             "One page per study and run, written by `python -m workflow_lib docs` from the run's "
             "claims tables and figures:", ""]
    runs: dict[str, dict[str, pd.DataFrame]] = {}
    for page in sorted(root.glob("*-*.md")):
        study, preset = page.stem.split("-", 1)  # study names have no "-"
        claims = read_claims(root / preset / f"{study}-claims.csv")
        runs.setdefault(study, {})[preset] = claims
        source = json.loads((root / preset / f"{study}-source.json").read_text())
        held = source.get("realisations")  # merged from shards: [held, planned]
        so_far = f" (realisations 0-{held[0] - 1} of {held[1]}, from shards)" if held else ""
        lines.append(f"- [{page.stem}]({page.name}){so_far}: {verdict_counts(claims)}")
    for study in studies():
        if study.name not in runs:
            continue
        presets = runs[study.name]
        lines += ["", f"## {study.title}: the verdicts side by side", "",
                  "| claim | statement | " + " | ".join(presets) + " |",
                  "|---|---|" + "---|" * len(presets)]
        stated: dict[str, dict[str, str]] = {}  # id -> preset -> its statement
        for preset, claims in presets.items():
            for claim, statement in zip(claims["id"], claims["statement"], strict=True):
                stated.setdefault(claim, {})[preset] = str(statement)
        for claim, by_run in stated.items():
            (first, statement), *_ = by_run.items()
            if len(set(by_run.values())) > 1:  # a run's own numbers in its words
                statement += f" (as the {first} run states it; the runs' words differ)"
            statement = statement.replace("|", "\\|")
            cells = []
            for claims in presets.values():
                verdict = claims.loc[claims["id"] == claim, "verdict"]
                cells.append(verdict.iloc[0] if len(verdict) else "")
            lines.append(f"| {claim} | {statement} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


PRESET_PAGES = ("usage.md", "proteins.md")
"""The pages under ``docs`` with tables of preset values (``presets.with_preset_tables``)."""


def write_docs(docs: Path, preset: str | None = None, results: Path | None = None,
               source: dict | None = None, only: tuple[str, ...] = ()) -> list[Path]:
    """Snapshot the run in ``results`` (if given) as ``preset`` and write its results pages,
    then the index, the configuration reference, the criteria of the claims
    (``criteria_page``), the tables of preset values in ``PRESET_PAGES``, the committed runs'
    costs in ``usage.md`` (``run_costs``), the claims tests' calibration table, the claims
    tables' columns and (in a source tree, from the parsed workflow) the stage tables in
    ``pipeline.md`` and (in a source tree, from the benchmarks' CSV files) the performance page
    under ``docs`` and, where ``docs`` is the checkout's, the README's first screen
    (``landing``); ``only``: snapshot just these studies (a run of one study's target); returns
    the pages written."""
    root = docs / "results"
    written = []
    for study in studies() if preset else ():
        snap = root / preset
        if results is not None and (not only or study.name in only):
            snapshot(results, snap, study, source or {})
        if (snap / f"{study.name}-claims.csv").exists():
            page = root / f"{study.name}-{preset}.md"
            page.write_text(results_page(snap, study, preset))
            written.append(page)
    root.mkdir(parents=True, exist_ok=True)
    presets = preset_configs()
    pages = {root / "README.md": index_page(root),
             docs / "configuration.md": configuration_page(load_schema(), presets),
             docs / "criteria.md": criteria_page()}
    for name in PRESET_PAGES:
        if (docs / name).exists():
            pages[docs / name] = with_preset_tables((docs / name).read_text(), presets)
    if docs / "usage.md" in pages:
        pages[docs / "usage.md"] = with_run_costs(pages[docs / "usage.md"], root)
    if (docs / "pipeline.md").exists():
        page = with_claims_columns(with_power_table((docs / "pipeline.md").read_text(), docs))
        pages[docs / "pipeline.md"] = with_stage_tables(page) if SNAKEFILE.exists() else page
    if (BENCHMARKS_DIR / "results").is_dir():
        pages[docs / "performance.md"] = performance_page(BENCHMARKS_DIR / "results")
        if docs.resolve() == BENCHMARKS_DIR.parent / "docs":  # the checkout's own docs
            readme = BENCHMARKS_DIR.parent / "README.md"
            pages[readme] = with_first_screen(readme.read_text(), BENCHMARKS_DIR / "results",
                                              root)
    for path, text in pages.items():
        path.write_text(text)
    return [*written, *pages]


POWER_BEGIN = "<!-- power table: generated by python -m workflow_lib docs -->"
POWER_END = "<!-- end of power table -->"
COLUMNS_BEGIN = "<!-- claims columns: generated by python -m workflow_lib docs -->"
COLUMNS_END = "<!-- end of claims columns -->"


def stored_power_table(path: Path) -> pd.DataFrame:
    """``calibration.power_table()`` read from the CSV ``path`` when its ``code`` column is the
    digest of ``workflow_lib.claims.calibration`` (``code_digest.module_digest``: it and every
    package file it imports); otherwise computed (about a minute) and written there with that
    digest."""
    code = module_digest(calibration.__name__)
    if path.is_file():
        stored = pd.read_csv(path)
        if len(stored) and (stored["code"] == code).all():
            return stored.drop(columns="code")
    table = calibration.power_table()
    write_csv(table.assign(code=code), path)
    return table


def with_power_table(page: str, docs: Path) -> str:
    """``page`` (docs/pipeline.md) with the calibration table of the claims tests
    (``stored_power_table``, kept in ``docs/calibration.csv``) between its
    markers."""
    return between(page, POWER_BEGIN, POWER_END,
                   power_markdown(stored_power_table(docs / "calibration.csv")))


def with_claims_columns(page: str) -> str:
    """``page`` (docs/pipeline.md) with the columns every claims table has, in their order
    (``claims.COLUMNS``), between its markers."""
    return between(page, COLUMNS_BEGIN, COLUMNS_END, ", ".join(f"`{c}`" for c in COLUMNS))
