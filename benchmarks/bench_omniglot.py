"""The Omniglot study's gradient-descent training at a preset's network: Adam steps per second
once compiled, the process's peak memory, and the hours the preset's step budget projects to.

    .venv/bin/python benchmarks/bench_omniglot.py --preset config/paper.yaml --steps 60

Builds the preset's episode data (the ``omniglot_data`` stage, from the shipped archives), then
runs its training recipe (``studies.omniglot.training.train``) twice in one process: ``--steps``
steps, then twice as many. The compiled programs are those of the job, so the difference of the
two wall times over the difference of their steps is the rate a long job runs at, its compilation
and data set-up excluded; ``projected_hours`` is the preset's ``omniglot.training.steps`` at that
rate. One row per run in ``benchmarks/results/bench_omniglot.csv`` with the network, the batch,
the threads and the measured figures.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import jax
from record import Recorder, default_csv

from workflow_lib.attention import icl
from workflow_lib.core.config import read_config_files
from workflow_lib.core.registry import Job, resolve
from workflow_lib.core.workflow import stage_functions
from workflow_lib.runtime.jax_setup import configure_jax
from workflow_lib.studies.omniglot import artefacts, training
from workflow_lib.studies.omniglot.registry import STUDY

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("preset", "width", "head_dim", "layers", "heads", "batch", "threads", "steps",
           "steps_per_s", "peak_rss_mb", "budget_steps", "projected_hours")


def episode_data(cfg: dict, folder: Path) -> artefacts.EpisodeData:
    """The preset's episode data, written by the ``omniglot_data`` stage into ``folder``."""
    omni = cfg["omniglot"]
    rule = STUDY.rule("omniglot_data")
    inputs = {k: str(REPO / omni["data_dir"] / omni[k]) for k in ("train_archive", "test_archive")}
    output = str(folder / "data.h5")
    resolve(stage_functions()["omniglot_data"])(Job(input=inputs, output={"data": output},
                                                    params=rule.params(cfg, {})))
    return artefacts.EpisodeData(output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="config/paper.yaml")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--csv", default=str(default_csv(__file__)))
    args = parser.parse_args()
    configure_jax(args.threads, "cpu", "bench_omniglot")
    cfg = read_config_files([REPO / "config.yaml", REPO / args.preset])
    omni = cfg["omniglot"]
    net_cfg = omni["network"]
    with tempfile.TemporaryDirectory() as tmp:
        data = episode_data(cfg, Path(tmp))
        bank = data.bank("train")
        net = icl.Net(*(net_cfg[k] for k in ("width", "head_dim", "layers", "heads")),
                      bank.tokens.shape[-1])
        seconds = []
        for steps in (args.steps, 2 * args.steps):
            recipe = training.Recipe.from_config({**omni["training"], "steps": steps,
                                                  "log_every": args.steps})
            start = time.perf_counter()
            training.train(jax.random.key(0), net, recipe, bank.tokens, bank.starts, data.emb)
            seconds.append(time.perf_counter() - start)
    rate = args.steps / (seconds[1] - seconds[0])
    budget = omni["training"]["steps"]
    row = {"preset": args.preset, **net_cfg, "batch": omni["training"]["batch"],
           "threads": args.threads, "steps": args.steps, "steps_per_s": round(rate, 3),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
           "budget_steps": budget, "projected_hours": round(budget / rate / 3600, 2)}
    Recorder(args.csv, COLUMNS).add(**row)
    print(" ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
