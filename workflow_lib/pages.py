"""Pages written from a run's outputs: the results pages under ``docs/results/`` and the front
page of the Snakemake report. Every number on them is read from a claims table or another table
the workflow wrote; nothing is typed.

``python -m workflow_lib docs --preset NAME [--results DIR --config FILE ...]`` copies a run's
claims tables and figures into ``docs/results/NAME/`` (the committed snapshot) and writes
``docs/results/<study>-NAME.md`` from that snapshot, the index ``docs/results/README.md`` and
``docs/configuration.md``; without ``--results`` it rewrites the pages from the snapshot alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from workflow_lib.artefacts import atomic_path
from workflow_lib.claims import VERDICTS
from workflow_lib.config import load_schema
from workflow_lib.reference import configuration_page
from workflow_lib.registry import Job, Study, studies

CLAIMS = {  # study -> its claims table, relative to the run's results folder
    "potts_paper": "tables/claims.csv",
    "attention_hmm": "paths/tables/claims.csv",
    "omniglot": "omniglot/tables/claims.csv",
}


def _number(x: float) -> str:
    return "" if pd.isna(x) else f"{x:.4g}"


def claim_cells(row: pd.Series) -> list[str]:
    """The cells of one claim for a page: id, figure, statement, paper, measured +- error (n),
    criterion, verdict."""
    error = "" if pd.isna(row["error"]) or row["error"] == 0 else f" ± {row['error']:.2g}"
    paper = "" if pd.isna(row["paper"]) else str(row["paper"])
    return [str(row["id"]), str(row["figure"]), str(row["statement"]), paper,
            f"{_number(row['measured'])}{error} (n = {int(row['n'])})", str(row["criterion"]),
            str(row["verdict"])]


def verdict_counts(claims: pd.DataFrame) -> str:
    """``'12 claims: 5 hold, 6 not resolved, 1 do not hold'``."""
    counts = claims["verdict"].value_counts()
    plural = {"holds": "hold", "does not hold": "do not hold"}
    parts = [f"{counts.get(v, 0)} {plural.get(v, v)}" for v in VERDICTS]
    return f"{len(claims)} claims: " + ", ".join(parts)


HEADER = ["claim", "figure", "the paper says", "paper's number", "measured", "criterion",
          "verdict"]


def _markdown_table(claims: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for _, row in claims.iterrows():
        *cells, verdict = (c.replace("|", "\\|") for c in claim_cells(row))
        lines.append("| " + " | ".join([*cells, f"**{verdict}**"]) + " |")
    return "\n".join(lines)


def snapshot(results: Path, dest: Path, study: Study, source: dict) -> bool:
    """Copy ``study``'s claims table and figures (PNG) from the run in ``results`` into
    ``dest``; False when the run has no claims table for it."""
    claims = results / CLAIMS[study.name]
    if not claims.exists():
        return False
    (dest / "figures").mkdir(parents=True, exist_ok=True)
    shutil.copy2(claims, dest / f"{study.name}-claims.csv")
    for panel in study.panels:
        png = results / "figures" / f"{panel.name}.png"
        if png.exists():
            shutil.copy2(png, dest / "figures" / png.name)
    (dest / "source.json").write_text(json.dumps(source, indent=1, sort_keys=True) + "\n")
    return True


def results_page(snapshot_dir: Path, study: Study, preset: str) -> str:
    """The Markdown page of ``study`` on the run of ``preset`` from its snapshot."""
    claims = pd.read_csv(snapshot_dir / f"{study.name}-claims.csv", keep_default_na=True)
    source = json.loads((snapshot_dir / "source.json").read_text())
    configs = "".join(f" --configfile {c}" for c in source.get("configs", []))
    lines = [f"# {study.title}: the {preset} run", "",
             f"*{study.paper}.*", "",
             f"Produced by `snakemake --cores 2{configs}` at commit "
             f"`{source.get('commit', 'unknown')}`; this page by `python -m workflow_lib docs "
             f"--preset {preset}`. Every number below is read from the run's claims table "
             f"([{study.name}-claims.csv]({preset}/{study.name}-claims.csv)).",
             "", "## Claims", "", verdict_counts(claims) + ". A verdict comes from the 95 % "
             "t-interval of the measured value over its n independent units (realisations or "
             "test episodes): see [pipeline.md](../pipeline.md#claims-tables).", "",
             _markdown_table(claims), "", "## Figures", ""]
    for panel in study.panels:
        png = snapshot_dir / "figures" / f"{panel.name}.png"
        if png.exists():
            lines += [f"![{panel.name}]({preset}/figures/{png.name})", "", panel.caption, ""]
    return "\n".join(lines)


def index_page(root: Path) -> str:
    """``docs/results/README.md``: every results page with its verdict counts."""
    lines = ["# Results", "", "One page per study and run, written by `python -m workflow_lib "
             "docs` from the run's claims tables and figures.", ""]
    for page in sorted(root.glob("*-*.md")):
        study, preset = page.stem.rsplit("-", 1)
        claims = pd.read_csv(root / preset / f"{study}-claims.csv")
        lines.append(f"- [{page.stem}]({page.name}): {verdict_counts(claims)}")
    return "\n".join(lines) + "\n"


def write_docs(docs: Path, preset: str, results: Path | None = None,
               source: dict | None = None) -> list[Path]:
    """Snapshot the run in ``results`` (if given) and write the results pages of ``preset``,
    the index and the configuration reference under ``docs``; returns the pages written."""
    root = docs / "results"
    snap = root / preset
    written = []
    for study in studies():
        if results is not None:
            snapshot(results, snap, study, source or {})
        if (snap / f"{study.name}-claims.csv").exists():
            page = root / f"{study.name}-{preset}.md"
            page.write_text(results_page(snap, study, preset))
            written.append(page)
    (root / "README.md").write_text(index_page(root))
    (docs / "configuration.md").write_text(configuration_page(load_schema()))
    return [*written, root / "README.md", docs / "configuration.md"]


def _rst(text: str) -> str:
    """``text`` with reStructuredText's inline markup characters escaped."""
    for char in "\\|*`_":
        text = text.replace(char, "\\" + char)
    return text


def front_page(claims: dict[str, str]) -> str:
    """The reStructuredText front page of the Snakemake report: every study's claims table
    (``claims``: study name -> path of its claims CSV)."""
    lines = ["What self-attention learns from masked language modelling", "=" * 58, "",
             "Each claim of the papers, measured by this run. A verdict comes from the 95 % "
             "t-interval of the measured value over its n independent units.", ""]
    for study in studies():
        if study.name not in claims:
            continue
        table = pd.read_csv(claims[study.name])
        title = f"{study.title}: {verdict_counts(table)}"
        lines += [title, "-" * len(title), "", f"*{study.paper}.*", "",
                  ".. list-table::", "   :header-rows: 1", ""]
        rows = [[*(_rst(c) for c in claim_cells(r)[:-1]), f"**{r['verdict']}**"]
                for _, r in table.iterrows()]
        for cells in [HEADER, *rows]:
            lines.append(f"   * - {cells[0]}")
            lines += [f"     - {cell}" if cell else "     -" for cell in cells[1:]]
        lines.append("")
    return "\n".join(lines)


def report_page(job: Job) -> None:
    """Stage ``report_page``: the report's front page from every study's claims table."""
    with atomic_path(job.output["page"]) as tmp:
        Path(tmp).write_text(front_page(dict(job.input)))
