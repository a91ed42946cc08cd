"""The command line's commands other than ``stage`` (``python -m workflow_lib``, ``__main__``):
``inspect``, ``check-config``, ``rules``, ``docs``, ``claims`` and ``omniglot``. Apart from the
stage entry, so that a change to them is no change to any stage's code
(``workflow_lib.core.code_digest``)."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys

from workflow_lib.runtime.jax_setup import configure_jax


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add the commands' parsers to the command line's subparsers ``sub``."""
    ins = sub.add_parser("inspect", help="describe HDF5 artefacts")
    ins.add_argument("files", nargs="+")
    chk = sub.add_parser("check-config", help="validate config files (merged in order)")
    chk.add_argument("files", nargs="+")
    sub.add_parser("rules", help="list every rule: the stage function it runs, the config keys "
                   "of its slice and its outputs (the rules files parsed with the default config)")
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
    docs.add_argument("--failed", metavar="FIRST-LAST",
                      help="with --results: record the shard FIRST-LAST (of --study) whose every "
                      "realisation failed in a stage that said why (its log ends in an error "
                      "line, the same on a re-run) as started, without tables")
    cl = sub.add_parser("claims", help="recompute every claims table of a results snapshot from "
                        "the tables beside it")
    cl.add_argument("snapshot", help="a snapshot folder, e.g. docs/results/quick")
    how = cl.add_mutually_exclusive_group()
    how.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 unless each recomputed table is identical (text "
                    "exactly, numbers to workflow_lib.claims.statistics.DIGITS significant digits)")
    how.add_argument("--against", metavar="SNAPSHOT",
                    help="write nothing; print each study's claims beside those of SNAPSHOT (an "
                    "earlier run), one Markdown table per study, and which verdicts changed")
    omni = sub.add_parser("omniglot", help="run the Omniglot study without Snakemake")
    omni.add_argument("outdir")
    omni.add_argument("--configfile", action="append", default=[],
                      help="config files merged in order (default: config.yaml if present)")
    omni.add_argument("--set", action="append", default=[], metavar="KEY.PATH=YAML")
    omni.add_argument("--model", help="a trained model artefact to use instead of training")
    omni.add_argument("--train-only", action="store_true", help="stop after training")
    omni.add_argument("--threads", type=int, default=1)


def run(args: argparse.Namespace) -> int:
    """Run the command ``args.command`` (not ``stage``); its exit status."""
    if args.command == "inspect":
        print("\n\n".join(_inspect(f) for f in args.files))
    elif args.command == "docs":
        _write_docs(args)
    elif args.command == "claims":
        return _compare_claims(args) if args.against else _recompute_claims(args)
    elif args.command == "check-config":
        return _check_config(args.files)
    elif args.command == "rules":
        print(_rules())
    else:
        _run_omniglot(args)
    return 0


def _rules() -> str:
    """Every registered rule, study by study: ``rule -> function``, then its config keys
    (``pages.stage_tables.slice_keys``) and outputs (relative to the results folder), indented."""
    from workflow_lib.core.config import study_sections
    from workflow_lib.core.studies import SHARED, studies
    from workflow_lib.core.workflow import example_slices, rules_as_written
    from workflow_lib.pages.stage_tables import slice_keys

    results, stages, outputs = rules_as_written()
    cfg, slices = example_slices()
    lines = []
    groups = [("Every study", SHARED, ()),
              *((s.title, s.rules, study_sections(s.name)) for s in studies())]
    for title, rules, own in groups:
        lines.append(f"{title}:")
        for rule in rules:
            keys = slice_keys(slices.get(rule.name, {}), cfg, own)
            files = [os.path.relpath(path, results) for path in outputs.get(rule.name, [])]
            lines += [f"  {rule.name} -> {stages[rule.name]}",
                      f"      config: {', '.join(keys) or 'none'}",
                      f"      writes: {', '.join(files) or 'none'}"]
    return "\n".join(lines)


def _write_docs(args: argparse.Namespace) -> None:
    from pathlib import Path

    from workflow_lib.core.errors import ConfigError
    from workflow_lib.pages.results import write_docs
    from workflow_lib.shards.snapshots import (
        merge_shards,
        read_manifest,
        snapshot_failed,
        snapshot_shard,
    )

    source = {"configs": args.configfile, "targets": args.target}
    results = Path(args.results) if args.results else None
    if results is not None and not results.is_dir():
        raise ConfigError(f"--results {results}: no such folder (run snakemake first)")
    if (results is not None or args.merge) and not args.preset:
        raise ConfigError(f"{'--merge' if args.merge else '--results'} needs --preset: the name "
                          "of the run on its pages")
    if results is not None and args.merge:
        raise ConfigError("--results and --merge: snapshot a run, or merge its shards, not both")
    if args.failed and results is None:
        raise ConfigError("--failed needs --results: the folder of the run whose shard failed")
    run, only = Path(args.docs) / "results" / (args.preset or ""), tuple(args.study)
    if args.failed:
        print(snapshot_failed(results, run, _failed_config(args), source, only))
        return
    record = read_manifest(results) if results is not None else None
    if record is not None and record["shard"] is not None:
        print(snapshot_shard(results, run, record, source, only))
        return
    if args.merge:
        for study in merge_shards(run, only):
            print(f"{run}: {study} merged from {run / 'shards'}")
    for page in write_docs(Path(args.docs), args.preset, results, source, only):
        print(page)


def _failed_config(args: argparse.Namespace) -> dict:
    """The config of the shard ``--failed`` of the run: config.yaml (the Snakefile's) and
    ``--configfile`` merged in order, as Snakemake merges them, with the shard and, given
    ``--study``, its studies."""
    from workflow_lib.core.config import read_config_files

    files = [*(["config.yaml"] if os.path.exists("config.yaml") else []), *args.configfile]
    sets = [f"shard={args.failed}", *([f"shard_studies={json.dumps(args.study)}"]
                                      if args.study else [])]
    return read_config_files(files, sets)


def _recompute_claims(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workflow_lib.claims.statistics import DIGITS, rounded
    from workflow_lib.core.studies import studies
    from workflow_lib.pages.results import read_claims, recompute_claims

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


def _compare_claims(args: argparse.Namespace) -> int:
    """Print the claims tables of ``args.snapshot`` beside ``args.against``'s, per study both
    hold (``workflow_lib.pages.verdicts.verdict_changes``); 2 when they share no study."""
    from pathlib import Path

    from workflow_lib.core.studies import studies
    from workflow_lib.pages.verdicts import read_claims, verdict_changes

    after, before = Path(args.snapshot), Path(args.against)
    shared = [s.name for s in studies() if (after / f"{s.name}-claims.csv").exists()
              and (before / f"{s.name}-claims.csv").exists()]
    if not shared:
        print(f"error: {after} and {before} share no study's claims table "
              "(<study>-claims.csv); name two snapshot folders, e.g. docs/results/quick",
              file=sys.stderr)
        return 2
    for name in shared:
        print(f"## {name}: {before} (before) against {after} (after)\n")
        try:
            print(verdict_changes(read_claims(before / f"{name}-claims.csv"),
                                  read_claims(after / f"{name}-claims.csv")) + "\n")
        except ValueError as exc:
            print(f"error: {name}: {exc}", file=sys.stderr)
            return 2
    alone = [f"{s.name} ({folder})" for s in studies() for folder in (after, before)
             if s.name not in shared and (folder / f"{s.name}-claims.csv").exists()]
    if alone:
        print(f"Left out, in one snapshot only: {', '.join(alone)}.")
    return 0


def _run_omniglot(args: argparse.Namespace) -> None:
    from workflow_lib.core.config import read_config_files

    files = args.configfile or (["config.yaml"] if os.path.exists("config.yaml") else [])
    cfg = read_config_files(files, args.set)
    configure_jax(args.threads, "gpu" if cfg["compute"]["gpu"] else "cpu",
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
    """Validate the merged config files and open every protein file they name (relative paths
    from the repository of the first file, ``_repository``; the files of a valid
    ``proteins.families`` even where other keys are invalid): one line per problem on stderr,
    then their count when there are several; 2 if any."""
    from workflow_lib.core.config import check, is_valid, merged_config, sources
    from workflow_lib.core.errors import ConfigError
    from workflow_lib.proteins.alignment import check_families

    cfg, problems = check(merged_config(files))
    if is_valid(cfg, "proteins.families"):
        problems += check_families(cfg["proteins"]["families"], _repository(files[0]))
    if problems:
        print(ConfigError(problems, sources(files)).report("error: "), file=sys.stderr)
        return 2
    print(f"{sources(files)}: valid")
    return 0


def _inspect(path: str) -> str:
    """``describe`` of an artefact; for samples artefacts also its beta tuning and attempts."""
    from workflow_lib.core.artefacts import describe, read_artefact

    text = describe(path)
    art = read_artefact(path)
    from workflow_lib.potts.artefact import POTTS_SAMPLES

    if art.schema == POTTS_SAMPLES and "attempts/beta" in art.data:
        from workflow_lib.potts.describe import describe_sampling

        text += "\n" + describe_sampling(path)
    return text
