"""What checkpoints cost (``workflow_lib.runtime.checkpoints``): each job kind with a checkpointed
loop run with checkpoints off and on, in one run, and the time one write of a state of a given size
takes.

Run: ``python benchmarks/bench_checkpoints.py [--configfile FILE ...] [--kinds ...] [--threads T]
[--write-mb 10 100 1000] [--csv PATH]``. The jobs run in this process, their inputs made first by
the workflow's own stages, on a tiny config (``TINY``, seconds per job) with any config files merged
over it (``--configfile config/paper.yaml`` for the paper's sizes). Job kinds (``KINDS``):
``sample_complexity`` (the sweep's L-BFGS fits), ``omniglot_train``, ``protein_fit plmdca`` (L-BFGS)
and ``protein_fit vanilla1`` (a transformer). Each kind runs first once unmeasured (so every run
finds its programs compiled), then once per mode (``MODES``): ``off`` (``checkpoints: false``),
``on`` (``checkpoint_every`` at the schema's default: a job shorter than it writes nothing, so this
is the cost of the boundaries alone) and ``every boundary`` (``checkpoint_every: 0``, a write at
every boundary: the most it can cost). A row holds the job's wall seconds, the writes, their seconds
in all and the checkpoint's size, the overhead against ``off`` and, from the mean write,
``default_overhead``: a write's share of ``checkpoint_every`` at the default, what writing costs a
job longer than that. A ``write`` row times ``Session.write`` of a state of ``--write-mb`` MB of
float64 (atomic, synced to disk), the cost of the largest checkpoints (the sweep's full fit, plmDCA
at large L)."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from record import Recorder, default_csv

COLUMNS = ("kind", "mode", "threads", "wall_s", "writes", "write_s", "checkpoint_mb",
           "overhead", "checkpoint_every", "default_overhead")  # fmt: skip
KINDS = ("sample_complexity", "omniglot_train", "protein_fit plmdca", "protein_fit vanilla1")
MODES = {"off": None, "on": "default", "every boundary": 0.0}  # mode -> checkpoint_every
REPO = Path(__file__).resolve().parents[1]
TINY = {
    "potts": {"L": 5, "C": 3, "beta": 0.5},
    "sampling": {"n_train": 200, "n_test": 100, "burn_in": 50, "sweeps_between": 2, "blocks": 2},
    "sample_complexity": {"M": [2, 10, 50, 200], "restarts": 4},
    "omniglot": {"n_train": 20, "n_validation": 20, "n_test": 20,
                 "network": {"width": 16, "head_dim": 8, "layers": 2, "heads": 2},
                 "training": {"steps": 2000, "batch": 16, "log_every": 500}},
    "proteins": {"realisations": 1, "max_iter": 200,
                 "transformer": {"steps": 400, "model_dim": 16, "batch_size": 32,
                                 "eval_every": 50}},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configfile", action="append", default=[],
                        help="config files merged over the tiny config, in order")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-mb", type=float, nargs="*", default=[10.0, 100.0, 1000.0])
    parser.add_argument("--csv", type=Path, default=default_csv(__file__))
    args = parser.parse_args()

    from workflow_lib.runtime.jax_setup import configure_jax

    configure_jax(args.threads, "cpu", "bench_checkpoints")
    import yaml

    from workflow_lib.core.config import load_config, merge, schema_default

    cfg = TINY
    for path in args.configfile:
        cfg = merge(cfg, yaml.safe_load(Path(path).read_text()) or {})
    cfg = load_config(cfg)
    every = float(schema_default("checkpoint_every"))
    rec = Recorder(args.csv, COLUMNS)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Inputs(cfg, Path(tmp), args.threads)
        for kind in args.kinds:
            run = inputs.job(kind)
            run(None)  # compiles every program the kind runs
            off = None
            for mode, mode_every in MODES.items():
                seconds, ck = run(every if mode_every == "default" else mode_every)
                off = seconds if mode == "off" else off
                row = {"kind": kind, "mode": mode, "threads": args.threads,
                       "wall_s": round(seconds, 3), "writes": ck.writes,
                       "write_s": round(ck.write_seconds, 4),
                       "checkpoint_mb": round(ck.bytes / 1e6, 3),
                       "overhead": round(seconds / off - 1, 4), "checkpoint_every": every,
                       "default_overhead": (round(ck.write_seconds / ck.writes / every, 5)
                                            if ck.writes else None)}
                rec.add(**row)
                print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        for mb in args.write_mb:
            seconds, size = write_seconds(mb, Path(tmp) / "write.npz")
            row = {"kind": f"write {mb:g} MB", "mode": "write", "threads": args.threads,
                   "wall_s": round(seconds, 4), "writes": 1, "write_s": round(seconds, 4),
                   "checkpoint_mb": round(size / 1e6, 3), "checkpoint_every": every,
                   "default_overhead": round(seconds / every, 5)}
            rec.add(**row)
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)


def write_seconds(mb: float, path: Path) -> tuple[float, int]:
    """Seconds of one ``Session.write`` of ``mb`` MB of float64 (the best of three) and the
    file's bytes."""
    import numpy as np

    from workflow_lib.runtime.checkpoints import Session

    ck = Session(path, 0.0, {})
    state = np.random.default_rng(0).standard_normal(int(mb * 1e6 / 8))
    best = np.inf
    for _ in range(3):
        ck.boundary("state", 1, 2, state)
        best = min(best, ck.write_seconds)
        ck.write_seconds = 0.0
    return best, ck.bytes


class Inputs:
    """The inputs of every job kind, made in ``folder`` by the workflow's stages for ``cfg``."""

    def __init__(self, cfg: dict, folder: Path, threads: int) -> None:
        self.cfg, self.folder, self.threads, self.made = cfg, folder, threads, {}

    def stage(self, study: str, rule: str, wildcards: dict, inputs: dict, outputs: dict,
              checkpoint: dict | None = None):
        """Run ``rule`` of ``study``; with a ``checkpoint`` (``checkpoints.job_spec``'s form),
        a checkpointed stage inside its own session, which is returned."""
        from workflow_lib.core.registry import Job, resolve
        from workflow_lib.core.studies import studies
        from workflow_lib.core.workflow import stage_functions
        from workflow_lib.runtime import checkpoints

        entry = {s.name: s for s in studies()}[study].rule(rule)
        job = Job(input=inputs, output=outputs, params=entry.params(self.cfg, wildcards),
                  threads=self.threads, checkpoint=checkpoint)
        target = stage_functions()[rule]
        stage = resolve(target)
        if checkpoint is None:
            return stage(job)
        with checkpoints.session(job, target) as ck:
            stage.__wrapped__(job)  # the stage without ``resumable``'s own session
        return ck

    def made_once(self, name: str, make) -> str:
        """The path of input ``name``, made by ``make(path)`` the first time it is asked for."""
        if name not in self.made:
            self.made[name] = str(self.folder / f"{name}.h5")
            make(self.made[name])
        return self.made[name]

    def job(self, kind: str):
        """``run(every)``: job ``kind`` with ``checkpoint_every = every`` (None: checkpoints off);
        its wall seconds and its checkpoint ``Session``."""
        cfg, out = self.cfg, str(self.folder / "out.h5")
        if kind == "sample_complexity":
            couplings = self.made_once("couplings", lambda path: self.stage(
                "potts_paper", "potts_couplings", {"r": "0"}, {}, {"couplings": path}))
            samples = self.made_once("samples", lambda path: self.stage(
                "potts_paper", "potts_sample", {"r": "0"}, {"couplings": couplings},
                {"samples": path}))
            study, rule, wildcards, inputs, outputs = ("potts_paper", f"potts_{kind}", {"r": "0"},
                                                       {"samples": samples}, {"curve": out})
        elif kind == "omniglot_train":
            archives = {k: str(REPO / cfg["omniglot"]["data_dir"] / cfg["omniglot"][k])
                        for k in ("train_archive", "test_archive")}
            data = self.made_once("omniglot_data", lambda path: self.stage(
                "omniglot", "omniglot_data", {}, archives, {"data": path}))
            study, rule, wildcards, inputs, outputs = ("omniglot", kind, {}, {"data": data},
                                                       {"model": out})
        else:
            family = cfg["proteins"]["families"][0]
            files = {k: str(REPO / family[k]) for k in ("alignment", "distances") if k in family}
            data = self.made_once("protein_data", lambda path: self.stage(
                "proteins", "protein_data", {"family": family["name"]}, files, {"data": path}))
            study, rule, inputs, outputs = "proteins", "protein_fit", {"data": data}, {"fit": out}
            wildcards = {"family": family["name"], "r": "0", "model": kind.split()[1]}

        def run(every: float | None):
            spec = {"file": str(self.folder / "checkpoint.npz"), "every": every or 0.0,
                    "enabled": every is not None}
            start = time.perf_counter()
            ck = self.stage(study, rule, wildcards, inputs, outputs, spec)
            return time.perf_counter() - start, ck

        return run


if __name__ == "__main__":
    main()
