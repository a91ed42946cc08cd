"""The performance page generated from the benchmarks' CSV files; docs/performance.md current."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

from workflow_lib.core.backend import describe
from workflow_lib.pages.performance import (
    BENCHMARKS_DIR,
    HOST_COLUMNS,
    NO_FIGURES,
    performance_page,
)
from workflow_lib.pages.reference import REGENERATE

ROOT = Path(__file__).resolve().parents[1]
HOST = {"host_cpu": "Test CPU 9000", "cpus": "64", "backend": "gpu", "device": "Test GPU 9000",
        "jax_version": "0.0.1"}


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def section(page: str, script: str) -> str:
    """The part of ``page`` under the heading of ``script``."""
    return page.split(f"## `{script}`", 1)[1].split("\n## ", 1)[0]


def test_page_shows_the_latest_run_with_its_host(tmp_path):
    command = "python benchmarks/bench_gibbs.py --lengths 20"
    old = {"commit": "aaaaaaa", "date": "2025-01-01T00:00:00+00:00"}
    new = {"commit": "bbbbbbb", "date": "2025-02-01T00:00:00+00:00"}
    write_csv(tmp_path / "bench_gibbs.csv", [
        {"L": "20", "sampler": "numpy", "mupd_per_s": "1.111", "vs_numpy": "", "command": command,
         **HOST, **old},
        {"L": "20", "sampler": "numpy", "mupd_per_s": "1.654", "vs_numpy": "", "command": command,
         **HOST, **new},
        {"L": "20", "sampler": "chains B=200", "mupd_per_s": "33.02", "vs_numpy": "19.96",
         "command": command, **HOST, **new},
    ])  # fmt: skip
    text = section(performance_page(tmp_path), "bench_gibbs.py")
    header = "| L | sampler | mupd_per_s | vs_numpy | " + " | ".join(HOST_COLUMNS) + " |"
    assert header in text
    host = " | ".join([*HOST.values(), new["commit"], new["date"]])
    assert f"| 20 | numpy | 1.654 |  | {host} |" in text
    assert f"| 20 | chains B=200 | 33.02 | 19.96 | {host} |" in text
    assert "1.111" not in text and old["commit"] not in text  # an earlier run is not shown
    assert f"from `{command}`" in text
    assert NO_FIGURES not in text


def test_missing_csv_gives_the_no_figures_line(tmp_path):
    page = performance_page(tmp_path)
    scripts = sorted(BENCHMARKS_DIR.glob("bench_*.py"))
    assert scripts, "no benchmarks/bench_*.py scripts found"
    for script in scripts:
        text = section(page, script.name)
        assert f".venv/bin/python benchmarks/{script.name}" in text
        assert NO_FIGURES in text


def test_a_comparison_shows_once_it_has_recorded_rows(tmp_path):
    """A ``compare_*.py`` script gets its section, after every ``bench_*.py``, only where its CSV
    exists; a ``bench_*.py`` script always does."""
    compared = sorted(BENCHMARKS_DIR.glob("compare_*.py"))
    assert compared, "no benchmarks/compare_*.py scripts found"
    assert not any(f"## `{script.name}`" in performance_page(tmp_path) for script in compared)
    write_csv(tmp_path / f"{compared[0].stem}.csv", [{"family": "PF00014", **HOST}])
    page = performance_page(tmp_path)
    shown = [script.name for script in compared if f"## `{script.name}`" in page]
    assert shown == [compared[0].name]
    last_bench = sorted(BENCHMARKS_DIR.glob("bench_*.py"))[-1].name
    assert page.index(f"## `{last_bench}`") < page.index(f"## `{compared[0].name}`")
    assert "PF00014" in section(page, compared[0].name)


def test_recorded_rows_reach_the_page(tmp_path):
    spec = importlib.util.spec_from_file_location("record", BENCHMARKS_DIR / "record.py")
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    rec = record.Recorder(tmp_path / "bench_replica.csv", ("step", "seconds"))
    rec.add(step="task (L = 200)", seconds=0.0071)
    rec.add(step="simulation", seconds=3.1)
    text = section(performance_page(tmp_path), "bench_replica.py")
    for value in rec.fixed.values():
        assert value in text
    found = describe()  # the backend and device of this process's JAX
    assert rec.fixed["backend"] == found["jax_backend"]
    assert rec.fixed["device"] == found["jax_device"]
    assert "| task (L = 200) | 0.0071 |" in text and "| simulation | 3.1 |" in text


def test_performance_page_is_current():
    page = ROOT / "docs" / "performance.md"
    expected = performance_page(ROOT / "benchmarks" / "results")
    assert page.is_file() and page.read_text(encoding="utf-8") == expected, (
        "docs/performance.md is out of date with benchmarks/results/*.csv; regenerate it with: "
        f"{REGENERATE}"
    )


def test_preset_projection_scales_each_realisation_and_keeps_the_rest(tmp_path):
    """bench_preset.py: a kind of job with a realisation (or chunk) in its path costs its wall
    time per realisation it covered in the run times the preset's realisations; the others
    cost what they cost once; the wall time over n cores is the job time over n, never below
    the longest job; each kind's row holds its jobs' CPU time in the run."""
    bench = tmp_path / "run" / "benchmarks"
    walls = {"potts/r0/samples": 100.0, "potts/r1/samples": 140.0,
             "train/factored/r0-1": 360.0, "theory/replica_theory": 7200.0,
             "plm/full/r0": 60.0}  # fmt: skip
    for job, seconds in walls.items():
        (bench / job).parent.mkdir(parents=True, exist_ok=True)
        (bench / f"{job}.tsv").write_text(f"s\tcpu_time\tmax_rss\n{seconds}\t1.0\t10.0\n")
    preset = tmp_path / "preset.yaml"
    preset.write_text("realisations: 10\n")
    out = tmp_path / "rows.csv"
    subprocess.run([sys.executable, str(BENCHMARKS_DIR / "bench_preset.py"), str(tmp_path / "run"),
                    "--preset", str(preset), "--csv", str(out)], check=True, cwd=ROOT)  # fmt: skip
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    kinds = {r["kind"]: float(r["job_hours"]) for r in rows if r["table"] == "per kind"}
    assert kinds == {"potts/r*/samples": 0.333, "train/factored/r*": 0.5,
                     "theory/replica_theory": 2.0, "plm/full/r*": 0.167}
    cpu = {r["kind"]: float(r["run_cpu_seconds"]) for r in rows if r["table"] == "per kind"}
    assert cpu == {"potts/r*/samples": 2.0, "train/factored/r*": 1.0,
                   "theory/replica_theory": 1.0, "plm/full/r*": 1.0}  # the run's, summed
    # (100 + 140) s * 10 / 2, 360 s * 10 / 2, once, 60 s * 10 / 1 (one realisation run)
    (projection,) = [r for r in rows if r["table"] == "projection"]
    assert float(projection["job_hours"]) == 3.0
    assert float(projection["wall_hours_2_cores"]) == 2.0  # the longest job, not 3.0 / 2
    assert float(projection["wall_hours_8_cores"]) == 2.0
