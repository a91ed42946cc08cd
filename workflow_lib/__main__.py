"""Command line: ``python -m workflow_lib {stage,inspect,check-config,omniglot} ...``.

``stage NAME --job JSON`` runs one workflow stage (what every Snakemake rule calls);
``inspect FILE...`` prints an artefact's schema, provenance, datasets and key figures;
``check-config FILE...`` validates config files (merged in order, as ``--configfile`` does) and
opens every protein alignment and distance file they name;
``omniglot OUTDIR`` runs the Omniglot study without Snakemake (on a GPU with ``compute.gpu``);
``claims SNAPSHOT [--check]`` recomputes a results snapshot's claims tables from the tables beside
them (``--check``: compares, numbers to ``claims.DIGITS`` significant digits);
``docs [--preset NAME [--results DIR | --merge]]`` writes the results pages (``workflow_lib.pages``)
and the configuration reference; on a shard's results ``--results`` writes the shard's snapshot
instead, and ``--merge`` merges a run's shard snapshots first (``workflow_lib.shard_snapshots``).
Errors the user can fix are printed as one line.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import logging
import os
import sys

from workflow_lib.backend import BackendError, require, select
from workflow_lib.registry import Job, stages

JOB_XLA_FLAGS = "--xla_cpu_use_fusion_emitters=false"
SINGLE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _configure_jax(threads: int, device: str, what: str) -> None:
    """Pin BLAS and XLA to ``threads``; on CPU, one XLA device per thread (chains shard over
    them); let JAX use only ``device``'s backend (``workflow_lib.backend.select``: a CPU job
    never takes a GPU, a GPU job allocates GPU memory on demand) and stop a GPU job (``what``:
    ``rule NAME``) that finds no GPU (``require``); keep compiled programs in a persistent cache
    shared by jobs (``JAX_CACHE_DIR``, default ``~/.cache/workflow_lib/jax``; compilation
    dominates short jobs and does not change numbers), every program, the many small ones too
    (jobs share them); compile with XLA:CPU's fusion emitters off (``JOB_XLA_FLAGS``: less CPU
    for the many short programs; the Gibbs kernels turn them back on for themselves). Must run
    before JAX starts its backend."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    flags = JOB_XLA_FLAGS + (f" {SINGLE_THREAD_XLA_FLAGS}" if threads == 1 else "")
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()
    select(device)
    import jax

    jax.config.update("jax_num_cpu_devices", threads)
    cache = os.environ.get("JAX_CACHE_DIR", os.path.expanduser("~/.cache/workflow_lib/jax"))
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    require(device, what)


def _run_stage(name: str, job_json: str) -> None:
    job = Job(**json.loads(job_json))
    _configure_jax(job.threads, job.device, f"rule {name}")
    module, func = stages()[name].split(":")
    getattr(importlib.import_module(module), func)(job)


def _write_docs(args: argparse.Namespace) -> None:
    from pathlib import Path

    from workflow_lib.config import ConfigError
    from workflow_lib.pages import write_docs
    from workflow_lib.shard_snapshots import merge_shards, read_manifest, snapshot_shard

    source = {"configs": args.configfile, "targets": args.target}
    results = Path(args.results) if args.results else None
    if results is not None and not results.is_dir():
        raise ConfigError(f"--results {results}: no such folder (run snakemake first)")
    if (results is not None or args.merge) and not args.preset:
        raise ConfigError(f"{'--merge' if args.merge else '--results'} needs --preset: the name "
                          "of the run on its pages")
    if results is not None and args.merge:
        raise ConfigError("--results and --merge: snapshot a run, or merge its shards, not both")
    run, only = Path(args.docs) / "results" / (args.preset or ""), tuple(args.study)
    record = read_manifest(results) if results is not None else None
    if record is not None and record["shard"] is not None:
        print(snapshot_shard(results, run, record, source, only))
        return
    if args.merge:
        for study in merge_shards(run, only):
            print(f"{run}: {study} merged from {run / 'shards'}")
    for page in write_docs(Path(args.docs), args.preset, results, source, only):
        print(page)


def _recompute_claims(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workflow_lib.claims import DIGITS, rounded
    from workflow_lib.pages import read_claims, recompute_claims
    from workflow_lib.registry import studies

    snap, differ = Path(args.snapshot), 0
    for study in studies():
        committed = snap / f"{study.name}-claims.csv"
        if not committed.exists():
            continue
        text = recompute_claims(snap, study)
        same = rounded(read_claims(committed)).equals(rounded(read_claims(io.StringIO(text))))
        differ += not same
        if not args.check:
            committed.write_text(text)
        state = "identical" if same else "differs" if args.check else "rewritten"
        print(f"{committed}: {state} (numbers to {DIGITS} significant digits)")
    return 1 if args.check and differ else 0


def _run_omniglot(args: argparse.Namespace) -> None:
    from workflow_lib.config import read_config_files

    files = args.configfile or (["config.yaml"] if os.path.exists("config.yaml") else [])
    cfg = read_config_files(files, args.set)
    _configure_jax(args.threads, "gpu" if cfg["compute"]["gpu"] else "cpu",
                   "the omniglot command")
    from workflow_lib.studies.omniglot.runner import run_study

    run_study(cfg, args.outdir, cfg["omniglot"]["data_dir"], args.model, args.train_only)


def _repository(config: str) -> str:
    """The folder of the Snakefile that reads ``config`` (relative paths in a config are relative
    to it): the nearest folder at or above the config file that holds a Snakefile, else the
    working directory; as a path relative to the working directory."""
    from pathlib import Path

    for folder in Path(config).resolve().parents:
        if (folder / "Snakefile").is_file():
            return os.path.relpath(folder)
    return "."


def _check_config(files: list[str]) -> int:
    """Validate the merged config files, then open every protein file they name (relative paths
    from the repository of the first file, ``_repository``): one line per problem on stderr; 2
    if any."""
    from workflow_lib.config import read_config_files
    from workflow_lib.proteins.alignment import check_families

    cfg = read_config_files(files)
    problems = check_families(cfg["proteins"]["families"], _repository(files[0]))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 2
    print(f"{' + '.join(files)}: valid")
    return 0


def _inspect(path: str) -> str:
    """``describe`` of an artefact; for samples artefacts also its beta tuning and attempts."""
    from workflow_lib.artefacts import describe, read_artefact

    text = describe(path)
    art = read_artefact(path)
    from workflow_lib.potts.artefact import POTTS_SAMPLES

    if art.schema == POTTS_SAMPLES and "attempts/beta" in art.data:
        from workflow_lib.potts.describe import describe_sampling

        text += "\n" + describe_sampling(path)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_lib", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stage", help="run one workflow stage")
    st.add_argument("name", choices=sorted(stages()))
    st.add_argument("--job", required=True, help="JSON: input, output, params, threads")
    ins = sub.add_parser("inspect", help="describe HDF5 artefacts")
    ins.add_argument("files", nargs="+")
    chk = sub.add_parser("check-config", help="validate config files (merged in order)")
    chk.add_argument("files", nargs="+")
    docs = sub.add_parser("docs", help="write docs/results/*.md and docs/configuration.md")
    docs.add_argument("--preset", help="the run's name on its pages, e.g. quick (without it: the "
                      "index, configuration and performance pages only)")
    docs.add_argument("--results", help="a finished run's results folder to snapshot first")
    docs.add_argument("--configfile", action="append", default=[],
                      help="the run's config files, recorded on the pages")
    docs.add_argument("--target", action="append", default=[],
                      help="the run's targets, recorded on the pages (default: the default one)")
    docs.add_argument("--study", action="append", default=[],
                      help="snapshot only these studies of the run (default: every study)")
    docs.add_argument("--docs", default="docs", help="the docs folder (default: docs)")
    docs.add_argument("--merge", action="store_true",
                      help="merge the run's shard snapshots (docs/results/PRESET/shards/*, "
                      "written by --results on a shard's results) into its snapshot first")
    cl = sub.add_parser("claims", help="recompute every claims table of a results snapshot from "
                        "the tables beside it")
    cl.add_argument("snapshot", help="a snapshot folder, e.g. docs/results/quick")
    cl.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 unless each recomputed table is identical (text "
                    "exactly, numbers to workflow_lib.claims.DIGITS significant digits)")
    omni = sub.add_parser("omniglot", help="run the Omniglot study without Snakemake")
    omni.add_argument("outdir")
    omni.add_argument("--configfile", action="append", default=[],
                      help="config files merged in order (default: config.yaml if present)")
    omni.add_argument("--set", action="append", default=[], metavar="KEY.PATH=YAML")
    omni.add_argument("--model", help="a trained model artefact to use instead of training")
    omni.add_argument("--train-only", action="store_true", help="stop after training")
    omni.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("jax").setLevel(logging.WARNING)
    from workflow_lib.artefacts import ArtefactError
    from workflow_lib.config import ConfigError
    from workflow_lib.registry import StageError
    from workflow_lib.shards import ShardError

    try:
        if args.command == "stage":
            _run_stage(args.name, args.job)
        elif args.command == "inspect":
            print("\n\n".join(_inspect(f) for f in args.files))
        elif args.command == "docs":
            _write_docs(args)
        elif args.command == "claims":
            return _recompute_claims(args)
        elif args.command == "check-config":
            return _check_config(args.files)
        else:
            _run_omniglot(args)
    except (ArtefactError, BackendError, ConfigError, ShardError, StageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
