"""A study's claims table: made from its tables by the function its registry names
(``Study.claims_of``) and checked, where it is made, for the columns every claims table has
(``claims.COLUMNS``). A run merged from shards adds the check ``run.started`` on the table of its
started realisations (``STARTED``, written by ``workflow_lib.shard_snapshots``)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from workflow_lib import claims as c
from workflow_lib.registry import StageError, Study, resolve
from workflow_lib.shards import REALISATION

STARTED = "started"  # a merged run's table of its started realisations


def started_check(of: Study, started: pd.DataFrame, held: set[int]) -> dict:
    """The check ``run.started`` of study ``of``: every realisation its shards started
    (``started``: columns realisation and failure, empty where none was recorded) has its rows
    in the per-realisation tables (``held``: the realisations they hold); measured: the fraction
    that has. It gates no claim: a realisation is recorded as failed where a stage reported an
    error, and the claims are on the others (the statement names the failed ones)."""
    ok = started[REALISATION].isin(held)
    failed = ", ".join(f"r{r}" for r in started.loc[~ok, REALISATION])
    return c.row("run.started", of.name, "shards", "Every realisation started has its tables "
                 f"(failed: {failed or 'none'})", "", c.every(ok), "every started realisation "
                 "has its rows in the per-realisation tables; gates no claim: a realisation is "
                 "recorded as failed where a stage reported an error the same on a re-run (the "
                 "page names the job and its error), and the claims are on the realisations "
                 "with tables", REALISATION, c.CHECK)


def claims_table(of: Study, tables: Mapping[str, pd.DataFrame],
                 started: pd.DataFrame | None = None) -> pd.DataFrame:
    """The claims table of study ``of`` from ``tables`` (name -> DataFrame) by its
    ``claims_of``, with ``started_check`` after it when ``started`` (a merged run's started
    realisations) is given; a ``StageError`` (one line naming the study and the columns) when
    it lacks a column of ``claims.COLUMNS``."""
    table = resolve(of.claims_of)(dict(tables))
    missing = [column for column in c.COLUMNS if column not in table.columns]
    if missing:
        raise StageError(f"study {of.name}: the claims table of {of.claims_of} has no column "
                         f"{', '.join(missing)} (every claims table has the columns "
                         "workflow_lib.claims.COLUMNS)")
    if started is None:
        return table
    held = {int(r) for name in of.realisation_tables() for r in tables[name][REALISATION]}
    return pd.concat([table, pd.DataFrame([started_check(of, started, held)])],
                     ignore_index=True)
