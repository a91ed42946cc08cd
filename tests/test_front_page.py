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
from workflow_lib.claims.statistics import CHECK, CLAIM, FAILS, VERDICTS, counted
from workflow_lib.core.config import read_config_files
from workflow_lib.core.studies import rules, studies
from workflow_lib.pages.report import front_page
from workflow_lib.pages.verdicts import IDENTITY_PRESET, why_not_resolved

SNAPSHOT = ROOT / "docs" / "results" / "quick"
TEXTS = {study.name: [study.title, study.paper] for study in studies()}


def _claims(names: tuple[str, ...] = ("potts_paper", "attention_hmm")) -> dict[str, str]:
    return {name: str(SNAPSHOT / f"{name}-claims.csv") for name in names}


def rendered(claims: dict[str, str], *run: object) -> str:
    """The front page's HTML as Snakemake's report makes it (``run``: its config files and
    target distance)."""
    text = Environment().from_string(front_page(claims, TEXTS, *run)).render()
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
            assert f"It gates {counted(len(gated), CLAIM)}," in item
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


def test_the_page_names_the_run_its_reading_and_why_claims_are_not_resolved():
    """The literal reading's page names its config file, its reading, the claims its failing
    checks left not resolved and the identity reading's preset; the identity reading's names
    its files and reading, without the pointer."""
    page = rendered(_claims(), ["config.yaml"], 0.3)
    lead = page.split("<h1>", 1)[1].split("</p>", 1)[0]
    assert "<b>This run:</b> <code>config.yaml</code>." in lead
    assert "literal reading" in lead and "glassy" in lead
    table = pd.read_csv(SNAPSHOT / "potts_paper-claims.csv")
    why = why_not_resolved(table, code=lambda s: f"<code>{s}</code>", escape=html.escape)
    assert why and why.split(":", 1)[0] in lead
    gating = {g for g in table["gated_by"].fillna("").str.split(";").sum() if g}
    assert gating and all(f"<code>{g}</code>" in lead for g in gating)
    assert f"<code>{IDENTITY_PRESET}</code>" in lead
    identity = {name: str(ROOT / "docs" / "results" / "quick_identity" / f"{name}-claims.csv")
                for name in ("potts_paper", "attention_hmm")}
    lead = rendered(identity, ["config.yaml", IDENTITY_PRESET], 0.7).split("<h1>", 1)[1]
    lead = lead.split("</p>", 1)[0]
    assert f"<code>config.yaml</code> + <code>{IDENTITY_PRESET}</code>" in lead
    assert "identity reading" in lead and "The identity reading, where" not in lead
    assert "This run" not in rendered(_claims()).split("<table", 1)[0]


def test_units_are_counted_in_the_plural():
    page = rendered(_claims())
    assert '<td class="num">3 realisations</td>' in page
    assert '<td class="num">1 theory curve</td>' in page and "3 realisation<" not in page


def test_the_report_rule_passes_the_config_files_and_the_target_distance():
    config = read_config_files([ROOT / "config.yaml", ROOT / IDENTITY_PRESET])
    params = rules()["report_page"].params(config, {"configfiles": ["config.yaml",
                                                                    IDENTITY_PRESET]})
    assert params["configfiles"] == ["config.yaml", IDENTITY_PRESET]
    assert params["target_hamming"] == config["beta_tuning"]["target_hamming"]
    assert params["texts"] == TEXTS
