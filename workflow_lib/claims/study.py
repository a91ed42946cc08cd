"""A study's claims table: made from its tables by the function its registry names
(``Study.claims_of``) and checked, where it is made, for the columns every claims table has
(``claims.COLUMNS``). A run merged from shards adds the check ``run.started`` on the table of its
started realisations (``STARTED``, written by ``workflow_lib.shards.snapshots``)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from workflow_lib.claims import statistics as c
from workflow_lib.core.errors import StageError
from workflow_lib.core.realisations import REALISATION
from workflow_lib.core.registry import Study, resolve

STARTED = "started"  # a merged run's table of its started realisations


def started_check(of: Study, started: pd.DataFrame, held: set[int]) -> dict:
    """The check ``run.started`` of study ``of``: every realisation its shards started
    (``started``: columns realisation and failure, empty where none was recorded) has its rows
    in the per-realisation tables (``held``: the realisations they hold); measured: the fraction
    that has. A realisation is recorded as failed where a stage reported an error, and the
    claims are on the others (the statement names the failed ones); it gates the claims whose
    verdict a worst case of the failed ones would change (``worst_case_gates``)."""
    ok = started[REALISATION].isin(held)
    failed = ", ".join(f"r{r}" for r in started.loc[~ok, REALISATION])
    return c.row("run.started", of.name, "shards", "Every realisation started has its tables "
                 f"(failed: {failed or 'none'})", "", c.every(ok), "every started realisation "
                 "has its rows in the per-realisation tables; a realisation is recorded as "
                 "failed where a stage reported an error the same on a re-run (the page names "
                 "the job and its error), the claims are on the realisations with tables, and "
                 "a claim whose verdict would change if every failed realisation were a copy of "
                 "any one realisation with tables (the worst observed) reads not resolved, "
                 "gated by this check", REALISATION, c.CHECK)


def worst_case_gates(of: Study, tables: Mapping[str, pd.DataFrame], table: pd.DataFrame,
                     failed: list[int]) -> pd.DataFrame:
    """``table`` (the claims of ``tables``) with ``run.started`` added to the gates of every
    claim whose verdict changes when each realisation of ``failed`` (started, without tables)
    takes the rows of one realisation that has them, for any such realisation: the failed
    ones at the worst value observed for that claim, which its verdict must survive."""
    if not failed:
        return table
    names = of.realisation_tables()
    moved = set()
    for donor in sorted({int(r) for name in names for r in tables[name][REALISATION]}):
        filled = dict(tables)
        for name in names:
            rows = tables[name][tables[name][REALISATION] == donor]
            filled[name] = pd.concat([tables[name], *(rows.assign(**{REALISATION: f})
                                                      for f in failed)], ignore_index=True)
        again = resolve(of.claims_of)(filled).set_index("id")["verdict"]
        moved |= {r["id"] for _, r in table.iterrows() if r["kind"] == c.CLAIM
                  and again.get(r["id"], r["verdict"]) != r["verdict"]}
    gates = [";".join(filter(None, [g, "run.started"])) if i in moved else g
             for i, g in zip(table["id"], table["gates"], strict=True)]
    return table.assign(gates=gates)


def claims_table(of: Study, tables: Mapping[str, pd.DataFrame],
                 started: pd.DataFrame | None = None) -> pd.DataFrame:
    """The claims table of study ``of`` from ``tables`` (name -> DataFrame) by its
    ``claims_of``, with ``started_check`` after it when ``started`` (a merged run's started
    realisations) is given, which then gates the claims a worst case of the failed realisations
    would turn (``worst_case_gates``); a ``StageError`` (one line naming the study and the
    columns) when it lacks a column of ``claims.COLUMNS``."""
    table = resolve(of.claims_of)(dict(tables))
    missing = [column for column in c.COLUMNS if column not in table.columns]
    if missing:
        raise StageError(f"study {of.name}: the claims table of {of.claims_of} has no column "
                         f"{', '.join(missing)} (every claims table has the columns "
                         "workflow_lib.claims.statistics.COLUMNS)")
    if started is None:
        return table
    held = {int(r) for name in of.realisation_tables() for r in tables[name][REALISATION]}
    failed = [int(r) for r in started[REALISATION] if int(r) not in held]
    table = worst_case_gates(of, tables, table, failed)
    return c.table([*table.to_dict("records"), started_check(of, started, held)])
