"""The template study's claims table (``claims.statistics.COLUMNS``) from its tables."""

from __future__ import annotations

import pandas as pd

from workflow_lib.claims import statistics as c


def template_claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One check: every square is its integer (offset by the realisation) squared."""
    squares = tables["squares"]
    exact = squares["square"] == (squares["realisation"] + squares["k"]) ** 2
    test = c.exact(float(exact.mean()), bool(exact.all()), n=len(squares))
    rows = [c.row("squares", "template", "none", "each square is its integer squared", "", test,
                  "every row exact", "(realisation, integer) pairs", kind=c.CHECK)]
    return c.table(rows)
