"""Command line: ``python -m workflow_lib {stage,inspect,check-config,rules,docs,claims,omniglot}``.

``stage workflow_lib.MODULE:FUNCTION --job JSON`` runs one workflow stage (what every Snakemake
rule calls, naming its stage function) on one job, or on each of a list of jobs in turn;
``inspect FILE...`` prints an artefact's schema, provenance, datasets and key figures;
``check-config FILE...`` validates config files (merged in order, as ``--configfile`` does) and
opens every protein alignment and distance file they name;
``rules`` lists every rule with the stage function it runs, its config keys and its outputs;
``omniglot OUTDIR`` runs the Omniglot study without Snakemake (on a GPU with ``compute.gpu``);
``claims SNAPSHOT [--check]`` recomputes a results snapshot's claims tables from the tables beside
them (``--check``: compares, numbers to ``claims.statistics.DIGITS`` significant digits);
``docs [--preset NAME [--results DIR | --merge]]`` writes the results pages
(``workflow_lib.pages.results``) and the configuration reference; on a shard's results
``--results`` writes the shard's snapshot instead (``--failed FIRST-LAST``: of a shard whose
realisations failed), and ``--merge`` merges a run's shard snapshots first
(``workflow_lib.shards.snapshots``).
Errors the user can fix are printed as one line each (a config's every problem, then their
count). This module is the stage entry (and in every stage's code digest,
``workflow_lib.core.code_digest``); the other commands live in ``workflow_lib.commands``, JAX's
set-up in ``workflow_lib.runtime.jax_setup``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys

from workflow_lib.commands import add_commands, run
from workflow_lib.core.backend import BackendError
from workflow_lib.core.registry import Job
from workflow_lib.runtime import job_cpu
from workflow_lib.runtime.jax_setup import configure_jax


def _run_stage(target: str, job_json: str, rule: str | None) -> None:
    """Stage ``target`` (``'workflow_lib.module:function'``, as the rule's text names it) on the
    job ``job_json`` holds, or on each of the list of jobs it holds (a chunk of realisations,
    ``rules/common.smk``'s ``per_realisation``), in turn, for ``rule`` (the Snakemake rule, which
    its error lines name; None: the stage); the job's CPU time is its log's last line
    (``workflow_lib.runtime.job_cpu``)."""
    given = json.loads(job_json)
    jobs = [Job(**each) for each in (given if isinstance(given, list) else [given])]
    configure_jax(jobs[0].threads, jobs[0].device, f"rule {rule}" if rule else f"stage {target}")
    module, func = target.split(":")
    stage = getattr(importlib.import_module(module), func)
    for job in jobs:
        stage(job)
    logging.getLogger("workflow_lib").info(job_cpu.LINE.format(job_cpu.seconds_so_far()))


def _stage_target(text: str) -> str:
    """``text`` if it names a function of the package as ``workflow_lib.MODULE:FUNCTION``."""
    module, sep, function = text.partition(":")
    if not sep or not function.isidentifier() or not module.startswith("workflow_lib."):
        raise argparse.ArgumentTypeError(f"{text!r}: expected workflow_lib.MODULE:FUNCTION, the "
                                         "stage a rule names in its params")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_lib", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stage", help="run one workflow stage")
    st.add_argument("target", type=_stage_target,
                    help="the stage function, workflow_lib.MODULE:FUNCTION (a rule's params.stage)")
    st.add_argument("--job", required=True, help="JSON: input, output, params, threads")
    st.add_argument("--rule", help="the Snakemake rule the job is of, for its messages")
    add_commands(sub)
    args = parser.parse_args(argv)

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("jax").setLevel(logging.WARNING)
    from workflow_lib.core.artefacts import ArtefactError
    from workflow_lib.core.errors import ConfigError, ShardError, StageError

    try:
        if args.command == "stage":
            _run_stage(args.target, args.job, args.rule)
        else:
            return run(args)
    except ConfigError as exc:
        print(exc.report("error: "), file=sys.stderr)
        return 2
    except (ArtefactError, BackendError, ShardError, StageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
