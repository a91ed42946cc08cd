"""The Omniglot study without Snakemake (on a GPU machine, say): its stages, as its rules file
names them (``workflow_lib.core.workflow.stage_functions``), in the registry's ``FLOW`` order,
with the job params the rules pass (``python -m workflow_lib omniglot``).

Writes ``OUTDIR/{data, model, features, theory, samples, pruning}.h5``, ``OUTDIR/tables/*.csv``
and ``OUTDIR/figures/*``, its training checkpointed under ``OUTDIR/.checkpoints``
(``workflow_lib.runtime.checkpoints``: a run stopped there resumes when run again); ``model`` uses a
trained model artefact instead of training (as ``omniglot.model_file`` does), ``train_only``
stops after training.
"""

from __future__ import annotations

from pathlib import Path

from workflow_lib.core.registry import Job, resolve
from workflow_lib.core.workflow import stage_functions
from workflow_lib.runtime.checkpoints import job_spec
from workflow_lib.studies.omniglot.registry import FLOW, STUDY


def run_study(cfg: dict, outdir: str | Path, data_dir: str | Path, model: str | None = None,
              train_only: bool = False) -> None:
    """Run every stage of the study for the validated config ``cfg``; the archives are read from
    ``data_dir`` (the folder ``omniglot.data_dir`` names)."""
    out, omni = Path(outdir), cfg["omniglot"]
    files = {name: str(out / f"{name}.h5") for _, name in FLOW.values()}
    if model:
        files["model"] = model

    stages = stage_functions()

    def run(name: str, inputs: dict, outputs: dict, params: dict) -> None:
        resolve(stages[name])(Job(input=inputs, output=outputs, params=params,
                                  checkpoint=job_spec(cfg, str(out), outputs)))

    for name, (reads, writes) in FLOW.items():
        if (name == "omniglot_train" and model) or (name == "omniglot_sample"
                                                     and not omni["sample_width"]):
            continue
        inputs = {a: files[a] for a in reads}
        if name == "omniglot_data":
            inputs = {k: str(Path(data_dir) / omni[k]) for k in ("train_archive", "test_archive")}
        run(name, inputs, {writes: files[writes]}, STUDY.rule(name).params(cfg, {}))
        if name == "omniglot_train" and train_only:
            return
    tables = {name: str(out / "tables" / f"{name}.csv") for name in STUDY.tables}
    samples = [files["samples"]] if omni["sample_width"] else []
    run("omniglot_tables", {"model": files["model"], "theory": files["theory"],
                            "pruning": files["pruning"], "samples": samples}, tables, {})
    claims = {"claims": str(out / "tables" / "claims.csv")}
    run("omniglot_claims", tables, claims, STUDY.rule("omniglot_claims").params(cfg, {}))
    for panel in STUDY.drawn_panels(cfg):
        run("omniglot_figure", {t: (tables | claims)[t] for t in panel.tables},
            {ext: str(out / "figures" / f"{panel.name}.{ext}") for ext in ("png", "pdf")},
            {"panel": panel.name})
