"""The front page of the Snakemake report (``snakemake --report report.html``), read at a glance:
the run's config files and its reading of the Potts paper's target distance, with how many claims
the failing checks left not resolved, the verdict counts of every study, then each protocol check
that does not hold with its criterion and the claims it gates, then one compact table per study
(id, kind, statement, measured ± error, n, p, verdict, and the check that gated a claim where a
table names one).

Snakemake renders the page (reStructuredText, first as a Jinja template) into a narrow column
beside the rule graph, vertically centred; the page's own style sheet widens that column, puts the
graph below it and starts the page at its top. Every number is read from the claims tables.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from workflow_lib.claims.statistics import (
    ALPHA,
    CHECK,
    CLAIM,
    FAILS,
    HOLDS,
    NOT_RESOLVED,
    VERDICTS,
    counted,
    every,
)
from workflow_lib.core.artefacts import atomic_path
from workflow_lib.core.registry import Job
from workflow_lib.core.studies import studies
from workflow_lib.pages.readings import PAPER_DISTANCE, reading
from workflow_lib.pages.verdicts import DEFAULT_STUDY, IDENTITY_PRESET, check_ids, read_claims
from workflow_lib.pages.verdicts import why_not_resolved as _why

HEADING = "What self-attention learns from masked language modelling"
EVERY_UNIT = every([]).name  # the test of a protocol check that every unit passes
VERDICT_CLASS = {HOLDS: "holds", NOT_RESOLVED: "open", FAILS: "fails"}

# Snakemake's report shows this page in a column of at most 32rem (Tailwind's ``max-w-lg``) beside
# the rule graph, in a container that centres it vertically (``items-center``), so that a long
# page starts above the window's top; ``:has(.front-page)`` selects those containers of this page.
STYLE = """
div.overflow-auto:has(.front-page) { align-items: flex-start; justify-content: flex-start; }
div.flex.gap-3:has(.front-page) { flex-direction: column; width: 100%; }
.prose:has(.front-page) { max-width: none; }
.front-page { font-size: 13px; line-height: 1.35; max-width: 78rem; }
.front-page h1 { font-size: 20px; margin: 0 0 4px; }
.front-page h2 { font-size: 15px; margin: 14px 0 4px; }
.front-page p { margin: 2px 0 6px; }
.front-page table { border-collapse: collapse; width: 100%; margin: 0 0 6px; table-layout: auto; }
.front-page th, .front-page td { border-bottom: 1px solid #e5e7eb; padding: 2px 6px;
  vertical-align: top; text-align: left; }
.front-page th { background: #f3f4f6; font-weight: 600; white-space: nowrap; }
.front-page td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.front-page td.id { font-family: monospace; font-size: 12px; white-space: nowrap; }
.front-page td.verdict { white-space: nowrap; }
.front-page td.statement { width: 40%; }
.front-page .holds { color: #166534; font-weight: 600; }
.front-page .open { color: #6b7280; font-weight: 600; }
.front-page .fails { color: #b91c1c; font-weight: 600; }
.front-page .note { color: #6b7280; }
.front-page .none { color: #d1d5db; }
.front-page table.counts { width: auto; }
.front-page table.counts td.num { min-width: 6.5rem; }
.front-page code::before, .front-page code::after { content: none; }
.front-page code { font-size: 12px; font-weight: 500; }
.front-page li { margin: 2px 0; }
"""


def _text(value: object) -> str:
    """A cell of a claims table as escaped HTML, empty for a missing value."""
    return "" if pd.isna(value) else html.escape(str(value))


def _number(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits (whole from ``10 ** digits`` to a million, no
    exponent there), empty if missing."""
    if pd.isna(x):
        return ""
    return f"{x:.0f}" if 10 ** digits <= abs(x) < 1e6 else f"{x:.{digits}g}"


def _measured(row: pd.Series) -> str:
    """``0.923 ± 0.045``, or the value alone where the row has no standard error."""
    error = row["error"]
    spread = "" if pd.isna(error) or error == 0 else f" ± {_number(error)}"
    return _number(row["measured"]) + spread


def _p(row: pd.Series) -> str:
    """``0.0031 (0.12)``: p and the exact p beside it where the test has one; empty for a test
    without a p-value."""
    if pd.isna(row["p"]):
        return ""
    exact = "" if pd.isna(row["p_exact"]) else f" ({_number(row['p_exact'], 2)})"
    return _number(row["p"], 2) + exact


def _verdict(verdict: str) -> str:
    return f'<span class="{VERDICT_CLASS.get(verdict, "open")}">{html.escape(verdict)}</span>'


def _count(rows: pd.DataFrame, verdict: str) -> str:
    """A cell: how many of ``rows`` have ``verdict``, in its colour unless none."""
    count = int((rows["verdict"] == verdict).sum())
    colour = VERDICT_CLASS.get(verdict, "open") if count else "none"
    return f'<td class="num {colour}">{count}</td>'


def summary(tables: Mapping[str, pd.DataFrame], titles: Mapping[str, str]) -> list[str]:
    """The HTML table of the verdict counts: a row per study, its claims' then its checks'
    counts by verdict."""
    verdicts = "".join(f'<th class="{VERDICT_CLASS[v]}">{html.escape(v)}</th>' for v in VERDICTS)
    lines = ['<table class="counts">',
             '<tr><th rowspan="2">study</th><th colspan="3">claims of the papers</th>'
             '<th colspan="3">checks of the protocol</th></tr>',
             f"<tr>{verdicts * 2}</tr>"]
    for name, table in tables.items():
        cells = [_count(table[table["kind"] == kind], v) for kind in (CLAIM, CHECK)
                 for v in VERDICTS]
        lines.append(f"<tr><td>{html.escape(titles[name])}</td>{''.join(cells)}</tr>")
    return [*lines, "</table>"]


def _gated(table: pd.DataFrame, check: str) -> str:
    """What the check ``check`` gates in ``table``: the claims naming it in ``gates`` (else in
    ``gated_by``), and of those the ones it turned ``not resolved``; empty where the table has
    neither column."""
    column = "gates" if "gates" in table else "gated_by" if "gated_by" in table else None
    if column is None:
        return ""
    gated = table[table[column].map(lambda cell: check in check_ids(cell))]
    if not len(gated):
        return "It gates no claim."
    ids = ", ".join(f"<code>{html.escape(i)}</code>" for i in gated["id"])
    turned = gated["gated_by"].map(lambda c: check in check_ids(c)).sum() if "gated_by" in gated \
        else len(gated)
    return (f"It gates {counted(len(gated), CLAIM)}, {turned} of them turned "
            f'{_verdict(NOT_RESOLVED)} by it: <span class="note">{ids}</span>.')


def failures(tables: Mapping[str, pd.DataFrame], titles: Mapping[str, str]) -> list[str]:
    """The HTML list of the checks that do not hold: each with its study, statement, criterion,
    measurement and the claims it gates (``_gated``); empty when every check holds or is not
    resolved."""
    items = []
    for name, table in tables.items():
        failed = table[(table["kind"] == CHECK) & (table["verdict"] == FAILS)]
        for _, row in failed.iterrows():
            if row["test"] == EVERY_UNIT:
                measured = (f"{_number(row['statistic'])} of "
                            f"{_text(counted(int(row['n']), row['unit']))} pass (mean "
                            f"{_number(row['measured'])})")
            else:
                measured = f"{_measured(row)} (n = {_text(counted(int(row['n']), row['unit']))})"
            items.append(
                f"<li><code>{html.escape(row['id'])}</code> ({html.escape(titles[name])}): "
                f"{_text(row['statement'])}. <b>Criterion:</b> {_text(row['criterion'])}. "
                f"<b>Measured:</b> {measured}. {_gated(table, row['id'])}</li>")
    if not items:
        return []
    return ["<h2>Checks that do not hold</h2>",
            "<p>A check tests the protocol (the data, the fits), not a paper's claim; a claim it "
            "gates is not resolved while it fails.</p>", "<ul>", *items, "</ul>"]


def claims_table(table: pd.DataFrame) -> list[str]:
    """The HTML table of one study's claims and checks: id, kind, statement (its criterion as
    the tooltip), measured ± error, n, p (exact p), verdict, and ``gated by`` where a row names
    the check that gated it."""
    gates = "gated_by" in table and table["gated_by"].map(check_ids).map(bool).any()
    head = ["id", "kind", "statement", "measured", "n", "p (exact)", "verdict",
            *(["gated by"] if gates else [])]
    lines = ["<table>", "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for _, row in table.iterrows():
        cells = [f'<td class="id">{html.escape(row["id"])}</td>', f"<td>{_text(row['kind'])}</td>",
                 f'<td class="statement" title="{_text(row["criterion"])}">'
                 f'{_text(row["statement"])}</td>',
                 f'<td class="num">{_measured(row)}</td>',
                 f'<td class="num">{_text(counted(int(row["n"]), row["unit"]))}</td>',
                 f'<td class="num">{_p(row)}</td>',
                 f'<td class="verdict">{_verdict(row["verdict"])}</td>']
        if gates:
            checks = ", ".join(map(html.escape, check_ids(row["gated_by"])))
            cells.append(f'<td class="id">{checks}</td>')
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return [*lines, "</table>"]


def _code(text: str) -> str:
    return f"<code>{html.escape(text)}</code>"


def this_run(tables: Mapping[str, pd.DataFrame], configfiles: Sequence[str],
             target_hamming: float | None) -> list[str]:
    """The run in words: its config files (as merged: ``config.yaml`` first), and where it ran
    the Potts paper, its reading of the paper's target distance (``readings.reading``), how many
    of its claims the failing checks left not resolved (``verdicts.why_not_resolved``) and,
    after the literal reading, the preset of the identity reading."""
    parts = []
    if configfiles:
        parts.append(f"<b>This run:</b> {' + '.join(map(_code, configfiles))}.")
    if DEFAULT_STUDY in tables and target_hamming is not None:
        parts.append(f"It runs {html.escape(reading(target_hamming))}.")
        why = _why(tables[DEFAULT_STUDY], code=_code, escape=html.escape)
        if why:
            parts.append(f"In the Potts paper, {why} (below).")
        if math.isclose(target_hamming, PAPER_DISTANCE):
            parts.append(f"The identity reading, where the data are diverse, is "
                         f"{_code(IDENTITY_PRESET)}.")
    return [f"<p>{' '.join(parts)}</p>"] if parts else []


def front_page(claims: Mapping[str, str | Path], texts: Mapping[str, list[str]],
               configfiles: Sequence[str] = (), target_hamming: float | None = None) -> str:
    """The report's front page (``claims``: study name -> path of its claims CSV; ``texts``:
    study name -> its title and citation; in the order of ``registry.studies``; ``configfiles``
    and ``target_hamming``: the run's config files and ``beta_tuning.target_hamming``, for
    ``this_run``): reStructuredText holding one raw HTML block, inside a Jinja raw block
    (Snakemake renders the page as a template first)."""
    tables = {s.name: read_claims(claims[s.name]) for s in studies() if s.name in claims}
    titles = {name: texts[name][0] for name in tables}
    body = [f"<style>{STYLE}</style>", '<div class="front-page">',
            f"<h1>{html.escape(HEADING)}</h1>", *this_run(tables, configfiles, target_hamming),
            "<p>Each claim of the papers and each check of the protocol, measured by this run. A "
            "verdict follows from the pre-registered test of its row: a claim holds when its "
            f"one-sided p is below {ALPHA:g} and does not hold when the opposite side's is; it is "
            "not resolved when neither is, or when a check it rests on does not hold (evidence "
            "neither way); a check holds when every unit passes. Hover over a statement for its "
            "criterion.</p>",
            *summary(tables, titles), *failures(tables, titles)]
    for name, table in tables.items():
        title, paper = texts[name]
        body += [f"<h2>{html.escape(title)}</h2>", f'<p class="note">{html.escape(paper)}.</p>',
                 *claims_table(table)]
    body.append("</div>")
    raw = "\n".join("   " + line for chunk in body for line in chunk.splitlines())
    return "\n".join(["{% raw %}", ".. raw:: html", "", raw, "", "{% endraw %}", ""])


def report_page(job: Job) -> None:
    """Stage ``report_page``: the report's front page from every study's claims table, with the
    run's config files and reading (its params: ``registry._report_params``)."""
    params = job.params
    with atomic_path(job.output["page"]) as tmp:
        Path(tmp).write_text(front_page(dict(job.input), params["texts"], params["configfiles"],
                                        params["target_hamming"]))
