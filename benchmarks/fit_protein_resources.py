"""Fit the protein jobs' resource laws (``workflow_lib/studies/proteins/resources.py``) to
``benchmarks/results/bench_proteins.csv`` and print them as that module writes them.

    .venv/bin/python benchmarks/fit_protein_resources.py

Each configuration (model, ``L``, ``M``) counts with its newest row, the code that runs now (a
model's rows from before a change of its fit are history). Such a row gives a measured amount at
its ``L``, ``M`` (its training plus held-out rows, the alignment's records a job reads) and heads
``H``: a ``baseline`` row the job's fixed ``seconds``
(``wall_s``) and ``mb`` (``peak_rss_mb``); a model's row its ``unit`` (``s_per_iteration``),
``rest`` (``wall_s - loop_s``: compilation and evaluation) and ``mb`` (``peak_rss_mb`` above its
baseline). Per law, the exponents of the variables it depends on (``VARIABLES``) are fitted by
least squares on the logarithms (rounded to two decimals); an exponent whose variable takes a
single value among the rows is fixed (``FIXED``); none is below 0. The coefficient is then the
largest ratio of a row's amount to the law without it, times ``SAFETY``, rounded up to three
significant figures, so that the law bounds every row.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_lib.studies.proteins.resources import Law, model_kind

CSV = Path(__file__).resolve().parent / "results" / "bench_proteins.csv"
SAFETY = 2.0
FIXED = {"l": 0.0, "m": 1.0, "h": 0.0}  # an exponent the rows cannot fit
VARIABLES = {  # (kind, law) -> the variables it depends on
    ("baseline", "seconds"): "lm", ("baseline", "mb"): "lm",
    **{(kind, law): "lmh" for kind in ("plmdca", "factored") for law in ("unit", "rest", "mb")},
    **{(kind, "unit"): "l" for kind in ("vanilla1", "vanilla3")},
    **{(kind, law): "lm" for kind in ("vanilla1", "vanilla3") for law in ("rest", "mb")},
}


def current_rows(csv: Path) -> pd.DataFrame:
    """The CSV's newest row of each configuration (model, ``L``, ``M``), with ``M_all``, the
    training plus held-out rows."""
    rows = pd.read_csv(csv)
    rows = rows.sort_values("date", kind="stable").drop_duplicates(["model", "L", "M"], keep="last")
    return rows.assign(M_all=rows["M"] + rows["M_test"])


def observations(csv: Path) -> dict[tuple[str, str], pd.DataFrame]:
    """``(kind, law) -> DataFrame`` of columns ``L, M, H, y`` (the measured amount)."""
    rows = current_rows(csv)
    out: dict[tuple[str, str], list] = {key: [] for key in VARIABLES}
    for row in rows.itertuples():
        if row.model == "baseline":
            kind, H = "baseline", 1
            amounts = {"seconds": row.wall_s, "mb": row.peak_rss_mb}
        else:
            kind, H = model_kind(row.model)
            amounts = {"unit": row.s_per_iteration, "rest": row.wall_s - row.loop_s,
                       "mb": max(row.peak_rss_mb - row.baseline_rss_mb, 1.0)}
        for law, y in amounts.items():
            if not (isinstance(y, float) and math.isnan(y)):
                out[kind, law].append((row.L, row.M_all, H, y))
    return {key: pd.DataFrame(values, columns=["L", "M", "H", "y"]) for key, values in out.items()}


def fit(data: pd.DataFrame, variables: str) -> Law:
    """The law of ``variables`` that bounds every row of ``data`` (module docstring)."""
    x = {"l": np.log(data["L"] / 100), "m": np.log(data["M"] / 1000), "h": np.log(data["H"])}
    y = np.log(data["y"].to_numpy(float))
    exps = {v: FIXED[v] if v in variables else 0.0 for v in "lmh"}
    free = [v for v in variables if data[{"l": "L", "m": "M", "h": "H"}[v]].nunique() > 1]
    target = y - sum(exps[v] * x[v] for v in "lmh" if v not in free)
    if free:
        design = np.column_stack([np.ones(len(y)), *(x[v] for v in free)])
        solution = np.linalg.lstsq(design, target, rcond=None)[0][1:]
        exps |= {v: max(0.0, round(float(e), 2)) for v, e in zip(free, solution, strict=True)}
    law = Law(1.0, **exps)
    ratio = max(float(yi) / law(L, M, H) for L, M, H, yi in data.itertuples(index=False))
    scale = 10 ** (math.floor(math.log10(ratio * SAFETY)) - 2)
    return Law(float(f"{math.ceil(ratio * SAFETY / scale) * scale:.3g}"), **exps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=CSV)
    args = ap.parse_args()
    data = observations(args.csv)
    if empty := [key for key, rows in data.items() if rows.empty]:
        raise SystemExit(f"{args.csv}: no rows for {empty}; run benchmarks/bench_proteins.py")
    laws = {key: fit(rows, VARIABLES[key]) for key, rows in data.items()}
    print("BASELINE = {")
    for law in ("seconds", "mb"):
        print(f'    "{law}": {laws["baseline", law]!r},')
    print("}\nCOSTS = {")
    for kind in dict.fromkeys(kind for kind, _ in laws if kind != "baseline"):
        print(f'    "{kind}": {{')
        for law in ("unit", "rest", "mb"):
            print(f'        "{law}": {laws[kind, law]!r},')
        print("    },")
    print("}")


if __name__ == "__main__":
    main()
