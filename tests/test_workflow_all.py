"""The default target end to end on a tiny config: every table and figure, then a no-op.

The run is the session's shared ``tiny_run`` (``tests/conftest.py``), which the sampling and
fault tests read too.
"""

import json

import h5py
import numpy as np
import pandas as pd
import pytest
import yaml

from tests.test_mlm import BATCHED_RTOL
from tests.workflow_runs import clone, snakemake_in
from workflow_lib.core import host
from workflow_lib.core.artefacts import read_artefact
from workflow_lib.core.config import load_config
from workflow_lib.core.studies import studies
from workflow_lib.pages.results import job_costs
from workflow_lib.runtime import job_cpu
from workflow_lib.studies.potts_paper.artefacts import MLM_TRAIN

pytestmark = pytest.mark.slow


def test_default_target_builds_every_figure(tiny_run):
    figures = tiny_run / "results/figures"
    cfg = load_config(yaml.safe_load((tiny_run / "tiny.yaml").read_text()))
    panels = [panel.name for study in studies() for panel in study.drawn_panels(cfg)]
    assert {"fig2d", "paths_fig2e", "omniglot_fig3f", "protein_contacts"} <= set(panels)
    for panel in panels:
        for ext in ("png", "pdf"):
            assert (figures / f"{panel}.{ext}").stat().st_size > 1000
    final = pd.read_csv(tiny_run / "results/tables/training_final.csv")
    # a = 0 of the interpolation is the factored fit, not trained again
    assert set(final["arch"]) == {"factored", "vanilla1", "interp-a1"}
    assert len(final) == 6  # 3 architectures x 2 realisations
    assert final["floor_loss"].notna().all()  # each realisation's factored_from_truth fit
    summary = pd.read_csv(tiny_run / "results/tables/sample_complexity_summary.csv")
    assert set(summary["M"]) == {2, 10, 50} and set(summary["n"]) == {2}
    pruning = pd.read_csv(tiny_run / "results/omniglot/tables/cumulative_pruning.csv")
    assert set(pruning["order"]) == {"ascending", "descending", "random"}
    assert pruning.groupby("order")["removed"].max().tolist() == [2, 2, 2]  # a head left per layer
    logged = ("potts/r0/samples", "train/factored/r1", "figures/fig2a", "tables/data")
    for stage in logged:
        assert (tiny_run / f"results/logs/{stage}.log").exists()
        assert (tiny_run / f"results/benchmarks/{stage}.tsv").exists()
    manifest = json.loads((tiny_run / "results/manifest.json").read_text())
    assert manifest["host"]["cpu"] == host.cpu()  # the processor the numbers are exact on
    again = snakemake_in(tiny_run, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


EXIT_S = 1.5  # CPU seconds of a job's shell and of its interpreter's exit, with a margin (up to
# 1.02 s seen: a tiny sample-complexity job, its checkpoint session closed before the exit)


def test_every_job_measures_its_cpu_time_at_its_end(tiny_run):
    """Every job's log ends with the CPU time the job measured (every thread), which the run's
    costs read: at least what Snakemake's benchmark sampled of the same job (its process tree,
    every 0.5 s, then every 30 s) but for the shell around it and the interpreter's exit after
    the line (``EXIT_S``). A tiny job ends before the sampler's first sparse look, so the two
    agree here; that the measure counts children the sampler can miss is
    ``test_job_cpu_time_counts_threads_and_children``."""
    results = tiny_run / "results"
    costs = job_costs(results).set_index("job")
    sampled = {job: pd.read_csv(results / "benchmarks" / f"{job}.tsv", sep="\t")["cpu_time"]
               .iloc[-1] for job in costs.index}
    for job, row in costs.iterrows():
        assert job_cpu.from_log(results / "logs" / f"{job}.log") == row["cpu_s"], job
        assert row["cpu_s"] >= sampled[job] - EXIT_S, (job, row["cpu_s"], sampled[job])


# Attributes that record when, where or how fast an artefact was made, not its numbers
TIMING = ("created", "git_commit", "steps_per_second")


def same_numbers(path_a, path_b) -> None:
    """Every dataset of two HDF5 artefacts equal to the last bit, and every attribute but the
    timings (``TIMING``, ``*_seconds``)."""
    with h5py.File(path_a) as a, h5py.File(path_b) as b:
        items = {}
        for name, f in (("a", a), ("b", b)):
            found = {f"@{k}": v for k, v in f.attrs.items()}
            f.visititems(lambda key, obj, found=found: found.update(
                {key: obj[()]} if isinstance(obj, h5py.Dataset) else
                {f"{key}@{k}": v for k, v in obj.attrs.items()}))
            items[name] = {k: v for k, v in found.items()
                           if not k.endswith(TIMING) and not k.endswith("seconds")}
        assert items["a"].keys() == items["b"].keys(), path_a
        for key, value in items["a"].items():
            assert np.array_equal(np.asarray(value), np.asarray(items["b"][key]),
                                  equal_nan=np.asarray(value).dtype.kind == "f"), (path_a, key)


def test_chunked_jobs_give_the_same_artefacts(tiny_run, tmp_path):
    """With ``compute.realisations_per_job: 2`` one job per stage runs both realisations
    (rules ``potts_couplings_r0_1``, ``potts_sample_r0_1``, ``potts_plm_r0_1``,
    ``potts_sample_complexity_r0_1``: in
    turn, in one process; ``plm_r0_1`` each fit kind too) and writes each realisation's
    artefacts to the last bit as the one-realisation jobs of the session's run; one training job
    per architecture (``potts_train_r0_1``) fits both side by side, the same within ``BATCHED_RTOL``
    (float32 rounding)."""
    wd = clone(tiny_run, tmp_path / "chunked")
    cfg = yaml.safe_load((wd / "tiny.yaml").read_text())
    (wd / "tiny.yaml").write_text(yaml.safe_dump(
        {**cfg, "compute": {**cfg["compute"], "realisations_per_job": 2}}))
    archs = ("factored", "vanilla1", "interp-a1")
    models = [f"results/train/{a}/r{r}.h5" for a in archs for r in (0, 1)]
    exact = [f"results/{path}" for r in (0, 1) for path in (
        f"potts/r{r}/couplings.h5", f"potts/r{r}/samples.h5", f"sample_complexity/r{r}.h5",
        *(f"plm/{kind}/r{r}.h5" for kind in cfg["plm"]["kinds"]))]
    run = snakemake_in(wd, *models, *exact)
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    out = run.stdout + run.stderr
    assert out.count("rule potts_train_r0_1:") == len(archs)
    for rule in ("potts_couplings", "potts_sample", "potts_plm", "potts_sample_complexity"):
        assert out.count(f"rule {rule}_r0_1:") == 1, rule
    for path in exact:
        same_numbers(tiny_run / path, wd / path)
    for path in models:
        alone, together = (read_artefact(root / path, MLM_TRAIN) for root in (tiny_run, wd))
        assert (alone.attrs["realisations_per_program"],
                together.attrs["realisations_per_program"]) == (1, 2)
        for name in ("train_loss", "test_loss", "recon_error"):
            np.testing.assert_allclose(together.attrs[name], alone.attrs[name],
                                       rtol=BATCHED_RTOL, err_msg=f"{path} {name}")
        np.testing.assert_allclose(together["history/test_loss"], alone["history/test_loss"],
                                   rtol=BATCHED_RTOL, err_msg=path)
