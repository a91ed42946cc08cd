"""Claims tables in words, for the results pages, the README and the report's front page: the
verdict counts, what a verdict is, why claims are not resolved (the checks that gate them) and
the verdicts of the committed runs of the quick preset under each reading of the Potts paper,
and two tables of one study side by side (``verdict_changes``).

Every number is read from a claims table (``claims.COLUMNS``); the words of a verdict follow
``workflow_lib.claims.statistics``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from workflow_lib.claims import statistics as c
from workflow_lib.core.config import read_config_files
from workflow_lib.pages.presets import QUICK, REPOSITORY
from workflow_lib.pages.readings import reading

DEFAULT_STUDY = "potts_paper"
"""The study whose claims the default run's words count: the Potts paper's."""
IDENTITY_PRESET = "config/quick_identity.yaml"
"""The quick preset under the identity reading, beside ``config.yaml``'s literal one."""


def read_claims(path: str | Path) -> pd.DataFrame:
    """A claims table as written (the paper's numbers are text)."""
    return pd.read_csv(path, dtype={"paper": str})


def verdict_counts(claims: pd.DataFrame) -> str:
    """``'12 claims: 5 hold, 6 not resolved, 1 do not hold; 3 checks: 3 hold, ...'``."""
    plural = {c.HOLDS: "hold", c.FAILS: "do not hold"}
    parts = []
    for kind in (c.CLAIM, c.CHECK):
        rows = claims[claims["kind"] == kind]
        if len(rows) or kind == c.CLAIM:
            counts = rows["verdict"].value_counts()
            verdicts = ", ".join(f"{counts.get(v, 0)} {plural.get(v, v)}" for v in c.VERDICTS)
            parts.append(f"{len(rows)} {kind}s: {verdicts}")
    return "; ".join(parts)


def verdict_meaning(docs: str) -> str:
    """What a verdict is, one Markdown paragraph; ``docs``: the path from the page to the docs
    folder (``..`` from ``docs/results/``), for its links."""
    return (
        "**What a verdict is.** Each row of a claims table is a *claim* of a paper or a *check* "
        "of the protocol (the data at their target, distinct, held out), measured by the run and "
        "tested by the test fixed for it before the data were seen. A claim **holds** when its "
        f"test is significant on the claim's side (one-sided p below {c.ALPHA:g}; a deterministic "
        "value, such as a theory curve, when it meets its criterion), **does not hold** when it "
        "is significant on the opposite side (a deterministic value: when it misses its "
        "criterion), and is **not "
        "resolved** otherwise: the run's units (realisations, episodes, families) do not tell "
        "either way, or a check the claim rests on (its `gates`) does not hold, which the row "
        "names in `gated_by`. A claim not resolved is evidence neither way. A check holds when "
        "every unit passes it, and does not hold when one fails. The tests: "
        f"[pipeline.md]({docs}/pipeline.md#claims-tables); each threshold with its reason: "
        f"[criteria.md]({docs}/criteria.md).")


def check_ids(cell: object) -> list[str]:
    """The check ids of a ``gates`` or ``gated_by`` cell (separated by ``;``)."""
    return [] if pd.isna(cell) else [v for v in str(cell).split(";") if v]


def gating(claims: pd.DataFrame) -> dict[str, list[str]]:
    """Each check that turned claims ``not resolved`` (their ``gated_by``), with the ids of those
    claims, in the table's order; empty for a table without ``gated_by``."""
    gated: dict[str, list[str]] = {}
    if "gated_by" not in claims:
        return gated
    for _, row in claims[claims["kind"] == c.CLAIM].iterrows():
        for check in check_ids(row["gated_by"]):
            gated.setdefault(check, []).append(row["id"])
    return gated


def _markdown_code(text: str) -> str:
    return f"`{text}`"


def why_not_resolved(claims: pd.DataFrame, ids: bool = False,
                     code: Callable[[str], str] = _markdown_code,
                     escape: Callable[[str], str] = str) -> str:
    """Why claims of ``claims`` read ``not resolved`` although their own test may decide: how
    many a failing check gated, and per check its statement and how many (``ids``: which) it
    gated; empty when no check gated a claim. ``code`` sets an id as code, ``escape`` a
    statement as text (Markdown by default)."""
    gated = gating(claims)
    if not gated:
        return ""
    claim_rows = claims[claims["kind"] == c.CLAIM]
    n = int(claim_rows["gated_by"].map(check_ids).map(bool).sum())
    statements = claims.set_index("id")["statement"]
    parts = []
    for check, claim_ids in gated.items():
        said = f" (“{escape(str(statements[check]))}”)" if check in statements else ""
        listed = ": " + ", ".join(map(code, claim_ids)) if ids else ""
        parts.append(f"{code(check)}{said} gates {len(claim_ids)}{listed}")
    return (f"{n} of the {c.counted(len(claim_rows), c.CLAIM)} {'is' if n == 1 else 'are'} "
            f"{c.NOT_RESOLVED} because a check they rest on does not hold: " + "; ".join(parts))


def error_text(row: pd.Series) -> str:
    """A claims row's error as printed after its measured value, `` ± 0.031``; empty for a row
    without one (none, or 0)."""
    error = row.get("error")
    return "" if pd.isna(error) or error == 0 else f" ± {error:.2g}"


def _reading_of(row: pd.Series | None) -> str:
    """One row's measured value, its units, p, verdict and the checks that gate it
    (``gated_by``), as one Markdown cell; a dash for ``None`` (no such row)."""
    if row is None:
        return "—"
    measured = "" if pd.isna(row.get("measured")) else f"{row['measured']:.4g}{error_text(row)}, "
    n, unit = row.get("n"), row.get("unit")
    units = ("" if pd.isna(n) else
             f"n = {c.counted(int(n), unit) if isinstance(unit, str) else int(n)}")
    p = "" if pd.isna(row.get("p")) else f", p {row['p']:.3g}"
    gates = check_ids(row.get("gated_by"))
    gated = f" (gated by {', '.join(map(_markdown_code, gates))})" if gates else ""
    return f"{measured}{units}{p}: **{row.get('verdict')}**{gated}"


COMPARED = ("test", "criterion", "gated_by")
"""What a row's verdict rests on besides its number: a change to one is named beside the
verdict's, so that a verdict kept under a new test is not read as the same result."""


def verdict_changes(before: pd.DataFrame, after: pd.DataFrame) -> str:
    """Two claims tables of one study side by side, one Markdown table: per id (``after``'s
    order, then the ids only ``before`` has) its measured value, units, p and verdict in each,
    whether the verdict changed (an id in one table only counts as a change) and which of
    ``COMPARED`` changed. Raises ValueError for a table that repeats an id."""
    for name, table in (("before", before), ("after", after)):
        repeated = table["id"][table["id"].duplicated()].unique()
        if len(repeated):
            raise ValueError(f"the {name} claims table repeats the ids "
                             f"{', '.join(map(str, repeated))}; each row needs its own")
    old, new = before.set_index("id"), after.set_index("id")
    ids = [*new.index, *(i for i in old.index if i not in new.index)]
    lines = ["| id | kind | before | after | verdict |", "|---|---|---|---|---|"]
    for i in ids:
        o, n = (old.loc[i] if i in old.index else None), (new.loc[i] if i in new.index else None)
        kind = (n if n is not None else o).get("kind", "")
        change = "changed"
        if o is not None and n is not None:
            moved = [k for k in COMPARED if str(o.get(k)) != str(n.get(k))]
            if str(o.get("verdict")) == str(n.get("verdict")):
                change = "same"
            change += f"; {' and '.join(moved)} changed" if moved else ""
        lines.append(f"| `{i}` | {kind} | {_reading_of(o)} | {_reading_of(n)} | {change} |")
    return "\n".join(lines)


def run_snapshot(root: Path, configs: list[str], study: str = DEFAULT_STUDY) -> Path | None:
    """The committed snapshot under ``root`` (``docs/results``) of a run of ``study`` by the
    default target with ``config.yaml`` and ``configs`` merged over it; None if there is none."""
    for snap in sorted(p for p in root.iterdir() if p.is_dir()):
        source = snap / f"{study}-source.json"
        if source.exists():
            ran = json.loads(source.read_text())
            if ([f for f in ran.get("configs", []) if f != QUICK] == configs
                    and not ran.get("targets")):
                return snap
    return None


def run_verdicts(root: Path, configs: list[str], prefix: str, ids: bool = False) -> str:
    """The Potts paper's verdicts in the committed run of the quick preset ``config.yaml`` with
    ``configs`` merged over it, in Markdown: the files, their reading of the paper's distance,
    the claims' verdict counts and why claims are not resolved (``why_not_resolved``; ``ids``:
    naming them); ``prefix``: the path from the page to ``root``. Empty without a snapshot."""
    snap = run_snapshot(root, configs)
    if snap is None:
        return ""
    files = [QUICK, *configs]
    target = read_config_files([REPOSITORY / f for f in files])["beta_tuning"]["target_hamming"]
    claims = read_claims(snap / f"{DEFAULT_STUDY}-claims.csv")
    page = f"{DEFAULT_STUDY}-{snap.name}.md"
    why = why_not_resolved(claims, ids)
    return (f"{' + '.join(map(_markdown_code, files))} runs {reading(target)}. Its committed "
            f"run ([{page}]({prefix}{page})): {verdict_counts(claims[claims['kind'] == c.CLAIM])}"
            + (f"; {why}." if why else "."))


def default_runs(root: Path, prefix: str, ids: bool = False) -> str:
    """The default run's verdicts beside those of the identity reading (``run_verdicts`` of
    ``config.yaml`` and of ``IDENTITY_PRESET``), one Markdown paragraph; empty where ``root``
    holds neither run."""
    runs = [run_verdicts(root, configs, prefix, ids) for configs in ([], [IDENTITY_PRESET])]
    return "**The default run.** " + " ".join(filter(None, runs)) if any(runs) else ""
