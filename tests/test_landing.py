"""The README's first screen (``workflow_lib.pages.landing``): the commands with the times the
benchmark rows give, per processor, what to open, the default run's verdicts; and
``bench_tests.py``, which records the test command's time."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys

from tests.conftest import ROOT
from workflow_lib.pages.landing import (
    BEGIN,
    END,
    MAIN_COMMAND,
    TEST_COMMAND,
    main_timing,
    suite_timing,
    what_to_open,
    with_first_screen,
)
from workflow_lib.pages.performance import BENCHMARKS_DIR, minutes

BENCH_RESULTS = ROOT / "benchmarks" / "results"
SNAPSHOTS = ROOT / "docs" / "results"


def _quick(commit: str, phase: str, wall: float, host: str, cores: str = "2",
           date: str = "2026-01-01") -> dict[str, str]:
    return {"tested_commit": commit, "phase": phase, "cores": cores, "wall_s": str(wall),
            "host_cpu": host, "cpus": "2", "date": date}


def test_minutes_keep_two_digits():
    assert minutes(138.6) == "2.3 min" and minutes(30) == "0.5 min"
    assert minutes(1248) == "21 min" and minutes(96.3, unit=False) == "1.6"


def test_the_main_command_time_is_each_processors_latest_cold_and_warm_pair():
    rows = [_quick("aaa", "cold", 600.0, "Old CPU", date="1"),
            _quick("aaa", "warm", 400.0, "Old CPU", date="1"),
            _quick("bbb", "cold", 138.6, "New CPU", date="2"),
            _quick("bbb", "warm", 96.3, "New CPU", date="2"),
            _quick("ccc", "cold", 50.0, "New CPU", cores="1", date="3"),  # not the README's cores
            _quick("ddd", "cold", 490.0, "Old CPU", date="4"),
            _quick("ddd", "warm", 290.0, "Old CPU", date="4")]
    text = main_timing(rows)
    fast = "2.3 min cold and 1.6 min warm on a 2-CPU New CPU at commit bbb"
    slow = "8.2 min cold and 4.8 min warm on a 2-CPU Old CPU at commit ddd"  # its latest run
    assert fast in text and slow in text and text.index(fast) < text.index(slow)
    assert "aaa" not in text and "ccc" not in text and "0.83 min" not in text
    assert main_timing([]).startswith("No benchmark row records its time yet")


def test_the_test_command_time_is_read_where_a_row_has_it():
    assert "No benchmark row records this command's time yet" in suite_timing([])
    assert "benchmarks/bench_tests.py" in suite_timing([])
    rows = [{"pytest_args": "", "wall_s": "1248", "passed": "835", "host_cpu": "A CPU",
             "cpus": "2", "commit": "eee"},
            {"pytest_args": "-m 'not slow'", "wall_s": "66", "passed": "600",
             "host_cpu": "A CPU", "cpus": "2", "commit": "eee"},
            {"pytest_args": "tests/test_host.py", "wall_s": "3", "passed": "4",
             "host_cpu": "A CPU", "cpus": "2", "commit": "eee"}]  # neither command
    text = suite_timing(rows)
    assert "The tests took, with an empty JAX cache: 21 min (835 passed) on a 2-CPU A CPU" in text
    assert "`.venv/bin/python -m pytest -m 'not slow'`: 1.1 min (600 passed)" in text
    assert "0.05 min" not in text and "No benchmark row" not in text


def test_what_to_open_names_the_report_and_the_default_runs_claims_files():
    text = what_to_open(SNAPSHOTS)
    assert "snakemake --report report.html" in text
    assert "`results/tables/claims.csv` (Potts paper)" in text
    assert "`results/paths/tables/claims.csv` (Attention paths)" in text
    assert "omniglot/tables" not in text  # a target of its own, not the default run's


def test_the_readme_opens_with_the_generated_first_screen():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert with_first_screen(readme, BENCH_RESULTS, SNAPSHOTS) == readme, (
        "README.md's first screen is stale: python -m workflow_lib docs")
    screen = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    assert readme.index(BEGIN) < readme.index("\n## ", readme.index("## Quick start") + 1)
    assert f"    {MAIN_COMMAND}\n" in screen and f"    {TEST_COMMAND}\n" in screen
    for line in ("The `snakemake` command took", "report.html", "results/tables/claims.csv",
                 "**The default run.**"):
        assert line in screen


def _bench_tests():
    spec = importlib.util.spec_from_file_location("bench_tests", BENCHMARKS_DIR / "bench_tests.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS_DIR))  # its ``from record import ...``
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS_DIR))
    return module


def test_bench_tests_reads_pytests_summary_line():
    outcomes = _bench_tests().outcomes
    assert outcomes("===== 835 passed, 2 skipped in 1248.31s (0:20:48) =====") == {
        "passed": 835, "failed": 0, "skipped": 2, "errors": 0}
    assert outcomes("== 1 failed, 3 passed, 1 error in 2.0s ==") == {
        "passed": 3, "failed": 1, "skipped": 0, "errors": 1}


def test_bench_tests_records_a_row_of_the_command_it_ran(tmp_path):
    out = tmp_path / "bench_tests.csv"
    args = ["tests/test_host.py", "-n", "0", "-p", "no:cacheprovider", "--noconftest"]
    subprocess.run([sys.executable, str(BENCHMARKS_DIR / "bench_tests.py"), "--csv", str(out),
                    "--", *args], check=True, cwd=ROOT, capture_output=True, timeout=300)
    with out.open(newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["pytest_args"] == " ".join(args)
    assert int(row["passed"]) > 0 and row["failed"] == "0"
    assert float(row["wall_s"]) > 0 and float(row["cpu_s"]) > 0 and row["host_cpu"]
