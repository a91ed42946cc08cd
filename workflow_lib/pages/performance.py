"""The performance page: ``docs/performance.md``, generated from the benchmarks' CSV files.

Each ``benchmarks/bench_*.py`` script appends one row per measured configuration to
``benchmarks/results/<script name>.csv`` (``benchmarks/record.py``): its own columns, the command
that ran it and the host columns. ``performance_page(Path("benchmarks/results"))`` is the text of
``docs/performance.md``: per benchmark, the first paragraph of the script's docstring, the
command and the rows of the file's latest run; ``reference.REGENERATE`` rewrites it with the
other generated pages.
"""

from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

from workflow_lib.pages.reference import REGENERATE

BENCHMARKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
HOST_COLUMNS = ("host_cpu", "cpus", "backend", "device", "jax_version", "commit", "date")
NO_FIGURES = "No figures recorded yet: run the command above."
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^nan$")


def minutes(seconds: float, unit: bool = True) -> str:
    """``seconds`` in minutes: two significant digits below 1 min (``0.42 min``), one decimal
    below 10 (``2.3 min``), whole from 10 (``21 min``); ``unit``: with `` min``."""
    m = seconds / 60
    text = f"{m:.2g}" if m < 1 else f"{m:.1f}" if m < 10 else f"{m:.0f}"
    return f"{text} min" if unit else text


def first_paragraph(script: Path) -> str:
    """The first paragraph of the module docstring of ``script`` on one line, its reST literals
    (````x````) as Markdown code (```x```)."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return paragraph.replace("``", "`")


def latest_run(path: Path) -> list[dict[str, str]]:
    """The rows of the CSV at ``path`` recorded at the ``commit`` of its most recent row: every
    run of the benchmark at that commit (one command, or several that measured it in parts);
    empty if the file holds no rows."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return []
    last = max(rows, key=lambda r: r.get("date") or "")
    return [r for r in rows if r.get("commit") == last.get("commit")]


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict[str, str]], columns: list[str]) -> list[str]:
    """Lines of a Markdown table of ``rows`` under ``columns``; columns of numbers (or blanks)
    are right-aligned."""

    def numeric(c: str) -> bool:
        values = [r.get(c) or "" for r in rows]
        return any(values) and all(v == "" or _NUMBER.match(v) for v in values)

    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---:" if numeric(c) else "---" for c in columns) + "|"]  # fmt: skip
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return lines


def figures(path: Path) -> list[str]:
    """The lines that show the latest runs in the CSV at ``path`` (``latest_run``): which command
    gave them (a column when several did), then
    its rows as a table (the benchmark's columns that hold a value, then the host columns)."""
    rows = latest_run(path) if path.is_file() else []
    if not rows:
        return [NO_FIGURES]
    columns = [c for c in rows[0] if c not in HOST_COLUMNS and any(r.get(c) for r in rows)]
    commands = {r.get("command") or "" for r in rows}
    lead = "Latest figures"
    if len(commands) == 1 and "command" in columns:
        lead += f", from `{commands.pop()}`"
        columns.remove("command")
    columns += [c for c in HOST_COLUMNS if c in rows[0]]
    return [f"{lead}:", "", *markdown_table(rows, columns)]


def benchmark_scripts(benchmarks_dir: Path, results_dir: Path) -> list[Path]:
    """The scripts the page shows: every ``bench_*.py``, then every ``compare_*.py`` (a side by
    side with an established implementation) that has recorded rows in ``results_dir``."""
    compared = [script for script in sorted(benchmarks_dir.glob("compare_*.py"))
                if (results_dir / f"{script.stem}.csv").is_file()]
    return sorted(benchmarks_dir.glob("bench_*.py")) + compared


def performance_page(results_dir: Path, benchmarks_dir: Path = BENCHMARKS_DIR) -> str:
    """The Markdown of ``docs/performance.md``: a title, what the benchmarks are for, then per
    script of ``benchmark_scripts`` what it measures (its docstring's first
    paragraph), the command that produces its figures and the latest run recorded in
    ``results_dir/<script name>.csv`` (or ``NO_FIGURES`` where that file does not exist)."""
    lines = [
        "# Performance",
        "",
        "The benchmarks in `benchmarks/` measure how fast the workflow's kernels run: the Gibbs "
        "sampler, MLM training, the replica theory and the attention-paths pipeline; the "
        "`compare_*` scripts that record rows put a model beside an established implementation. "
        "Speed "
        "targets live here, never in unit tests: the tests check what the code computes, and a "
        "timing depends on the host that measures it. Each script prints its figures and appends "
        "them, one row per measured configuration, to `benchmarks/results/<script name>.csv` "
        "(`--csv PATH` writes elsewhere); a ratio is always against a baseline measured in the "
        "same run, so that both sides share one host. Every row records its host (`host_cpu`, "
        "`cpus`, JAX's `backend` and `device`, `jax_version`), the `commit` and the UTC `date`, "
        "and the command that gave it; the tables below show each file's rows at its latest "
        "commit. This page is "
        "generated from those files by `workflow_lib.pages.performance`; regenerate it with "
        f"`{REGENERATE}`.",
    ]
    for script in benchmark_scripts(benchmarks_dir, results_dir):
        lines += [
            "",
            f"## `{script.name}`",
            "",
            first_paragraph(script),
            "",
            f"    .venv/bin/python benchmarks/{script.name}",
            "",
            *figures(results_dir / f"{script.stem}.csv"),
        ]
    return "\n".join(lines) + "\n"
