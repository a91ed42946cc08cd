"""Run the one-shot Omniglot stages without Snakemake (on a GPU machine, say), in the rules'
order and with the job params they pass; how ``paper_model.h5`` was trained:

    PYTHONPATH=. python data/omniglot/run_stages.py OUTDIR --configfile config/paper.yaml \\
        [--set omniglot.training.steps=2000 ...] [--model FILE] [--train-only]

The config is ``config.yaml``, then each ``--configfile`` merged over it as Snakemake does, then
each ``--set``. ``--model`` uses a trained model artefact instead of training (as
``omniglot.model_file`` does); ``--train-only`` stops after training. Writes ``OUTDIR/{data,
model, features, theory, samples, pruning}.h5``, ``OUTDIR/tables/*.csv`` and
``OUTDIR/figures/*``. Without the ``jsonschema`` package (a bare GPU image) the config is not
validated, only completed with the schema's defaults.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import types
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
VALIDATE = importlib.util.find_spec("jsonschema") is not None
if not VALIDATE:
    sys.modules["jsonschema"] = types.ModuleType("jsonschema")  # config.py imports it

from workflow_lib import config  # noqa: E402
from workflow_lib.analysis.omniglot_tables import PANEL_TABLES, TABLES  # noqa: E402
from workflow_lib.omniglot_artefacts import stage_params  # noqa: E402
from workflow_lib.stages import Job  # noqa: E402
from workflow_lib.stages import omniglot as stages  # noqa: E402


def merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def read_config(files: list[str], sets: list[str]) -> dict:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    for path in files:
        cfg = merge(cfg, yaml.safe_load(Path(path).read_text()))
    for item in sets:
        keys, value = item.split("=", 1)
        *parents, last = keys.split(".")
        node = cfg
        for k in parents:
            node = node.setdefault(k, {})
        node[last] = yaml.safe_load(value)
    if VALIDATE:
        return config.load_config(cfg)
    config._fill_defaults(config.load_schema(), cfg)
    return cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--configfile", action="append", default=[])
    ap.add_argument("--set", action="append", default=[], metavar="KEY.PATH=YAML")
    ap.add_argument("--model", help="a trained model artefact to use instead of training")
    ap.add_argument("--train-only", action="store_true")
    args = ap.parse_args()
    cfg = read_config(args.configfile, args.set)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s: %(message)s")
    out, omni = Path(args.outdir), cfg["omniglot"]
    f = {name: str(out / f"{name}.h5")
         for name in ("data", "model", "features", "theory", "samples", "pruning")}
    if args.model:
        f["model"] = args.model
    folder = ROOT / omni["data_dir"]

    def run(stage: str, inputs: dict, outputs: dict, params: dict | None = None) -> None:
        getattr(stages, stage)(Job(input=inputs, output=outputs,
                                   params=stage_params(cfg, stage) if params is None else params))

    run("omniglot_data", {"train_archive": str(folder / omni["train_archive"]),
                          "test_archive": str(folder / omni["test_archive"])}, {"data": f["data"]})
    if not args.model:
        run("omniglot_train", {"data": f["data"]}, {"model": f["model"]})
    if args.train_only:
        return
    run("omniglot_features", {"data": f["data"], "model": f["model"]},
        {"features": f["features"]})
    run("omniglot_theory", {"features": f["features"]}, {"theory": f["theory"]})
    samples = []
    if omni["sample_width"]:
        run("omniglot_sample", {"features": f["features"], "theory": f["theory"]},
            {"samples": f["samples"]})
        samples = [f["samples"]]
    run("omniglot_prune", {"data": f["data"], "model": f["model"], "theory": f["theory"]},
        {"pruning": f["pruning"]})
    tables = {name: str(out / "tables" / f"{name}.csv") for name in TABLES}
    run("omniglot_tables", {"model": f["model"], "theory": f["theory"],
                            "pruning": f["pruning"], "samples": samples}, tables, {})
    for panel, needs in PANEL_TABLES.items():
        run("omniglot_figure", {t: tables[t] for t in needs},
            {ext: str(out / "figures" / f"{panel}.{ext}") for ext in ("png", "pdf")},
            {"panel": panel})


if __name__ == "__main__":
    main()
