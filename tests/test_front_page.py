"""The report's front page: verdict counts per study first, each failing check explained with the
claims it gates, one compact table per study; it renders as Snakemake renders it (a Jinja
template, then reStructuredText)."""

from __future__ import annotations

import html
import re

import pandas as pd
from docutils.core import publish_parts
from jinja2 import Environment

from tests.conftest import ROOT
from workflow_lib.claims import CHECK, CLAIM, FAILS, VERDICTS
from workflow_lib.front_page import front_page
from workflow_lib.registry import studies

SNAPSHOT = ROOT / "docs" / "results" / "quick"
TEXTS = {study.name: [study.title, study.paper] for study in studies()}


def _claims(names: tuple[str, ...] = ("potts_paper", "attention_hmm")) -> dict[str, str]:
    return {name: str(SNAPSHOT / f"{name}-claims.csv") for name in names}


def rendered(claims: dict[str, str]) -> str:
    """The front page's HTML as Snakemake's report makes it."""
    text = Environment().from_string(front_page(claims, TEXTS)).render()
    return publish_parts(text, writer="html")["html_body"]


def test_every_claim_and_the_verdict_counts_come_first():
    page = rendered(_claims())
    for name, path in _claims().items():
        table = pd.read_csv(path)
        assert all(f'<td class="id">{claim}</td>' in page for claim in table["id"]), name
        row = page.split(f"<tr><td>{TEXTS[name][0]}</td>", 1)[1].split("</tr>", 1)[0]
        expected = [int((table[table["kind"] == kind]["verdict"] == verdict).sum())
                    for kind in (CLAIM, CHECK) for verdict in VERDICTS]
        assert [int(n) for n in re.findall(r">(\d+)</td>", row)] == expected, name
    summary = page.index("checks of the protocol")
    assert summary < page.index("Checks that do not hold") < page.index(">fig2a.optimal</td>")


def test_a_failing_check_shows_its_criterion_and_the_claims_it_gates():
    page = rendered(_claims())
    table = pd.read_csv(SNAPSHOT / "potts_paper-claims.csv")
    failed = table[(table["kind"] == CHECK) & (table["verdict"] == FAILS)]
    assert len(failed), "the snapshot has no failing check to explain"
    explained = page.split("Checks that do not hold", 1)[1].split("</ul>", 1)[0]
    for _, check in failed.iterrows():
        item = explained.split(f"<code>{check['id']}</code>", 1)[1].split("</li>", 1)[0]
        assert html.escape(check["criterion"]) in item
        gates = table["gates"].fillna("").str.split(";")
        gated = table[[check["id"] in names for names in gates]]
        if len(gated):
            assert f"It gates {len(gated)} claim(s)" in item
            assert all(f"<code>{claim}</code>" in item for claim in gated["id"])
        else:
            assert "It gates no claim." in item


def test_a_table_without_gates_renders_without_the_gate_column(tmp_path):
    table = pd.read_csv(SNAPSHOT / "potts_paper-claims.csv").drop(columns=["gates", "gated_by"])
    path = tmp_path / "potts_paper-claims.csv"
    table.to_csv(path, index=False)
    page = rendered({"potts_paper": str(path)})
    assert "<th>gated by</th>" not in page and "It gates" not in page
    assert "Checks that do not hold" in page
    with_gates = rendered(_claims(("potts_paper",)))
    assert "<th>gated by</th>" in with_gates


def test_all_checks_holding_leave_out_the_failures_section():
    page = rendered(_claims(("attention_hmm",)))
    assert "Checks that do not hold" not in page and "front-page" in page
