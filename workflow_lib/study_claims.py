"""A study's claims table: made from its tables by the function its registry names
(``Study.claims_of``) and checked, where it is made, for the columns every claims table has
(``claims.COLUMNS``)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from workflow_lib.claims import COLUMNS
from workflow_lib.registry import StageError, Study, resolve


def claims_table(of: Study, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of study ``of`` from ``tables`` (name -> DataFrame) by its
    ``claims_of``; a ``StageError`` (one line naming the study and the columns) when it lacks a
    column of ``claims.COLUMNS``."""
    table = resolve(of.claims_of)(dict(tables))
    missing = [column for column in COLUMNS if column not in table.columns]
    if missing:
        raise StageError(f"study {of.name}: the claims table of {of.claims_of} has no column "
                         f"{', '.join(missing)} (every claims table has the columns "
                         "workflow_lib.claims.COLUMNS)")
    return table
