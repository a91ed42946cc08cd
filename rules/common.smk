# Config validation (before any job starts) and the helpers every rule uses.
import json
import os
import sys

from snakemake.io import strip_wildcard_constraints

from workflow_lib.architectures import FIG2B, PLM_KINDS, interpolated, wildcard_pattern
from workflow_lib.code_digest import stage_digest
from workflow_lib.config import ConfigError, load_config
from workflow_lib.stages import STAGES

try:
    CFG = load_config(config)
except ConfigError as exc:
    sys.stderr.write(f"config error: {exc}\n")
    sys.exit(1)

RESULTS = CFG["results"]
REALISATIONS = list(range(CFG["realisations"]))
THREADS = CFG["compute"]["threads"]
GPU = {"gpu": 1} if CFG["compute"]["gpu"] else {}
PY = sys.executable


def job(params_slice):
    """The ``--job`` JSON of a rule: its input/output paths, config slice and threads."""

    def build(wildcards, input, output, threads):
        return json.dumps(
            {
                "input": dict(input.items()),
                "output": dict(output.items()),
                "params": params_slice(wildcards) if callable(params_slice) else params_slice,
                "threads": threads,
            },
            sort_keys=True,
        )

    return build


def stage(name):
    """Shell command running stage ``name`` of workflow_lib with the rule's job and log. A rule
    that runs stage ``name`` is named ``name``; ``derive_stage_directives`` gives it the rest."""
    return f"{PY} -m workflow_lib stage {name} --job {{params.job:q}} > {{log}} 2>&1"


def derive_stage_directives():
    """Give every stage rule (run after all rules are defined) what follows from its name and
    first output ``RESULTS/X.ext``: params ``code`` (the digest of the package files its stage
    function imports, transitively: a code edit re-runs exactly the rules whose stage reaches
    it), log ``RESULTS/logs/X.log`` and benchmark ``RESULTS/benchmarks/X.tsv``."""
    for each in workflow.rules:
        if each.name not in STAGES:
            continue
        output = strip_wildcard_constraints(str(each.output[0]))
        stem = os.path.splitext(os.path.relpath(output, RESULTS))[0]
        each.set_params(code=stage_digest(STAGES[each.name]))
        each.log_modifier = each.benchmark_modifier = each.output_modifier  # as the parser does
        each.set_log(f"{RESULTS}/logs/{stem}.log")
        each.benchmark = f"{RESULTS}/benchmarks/{stem}.tsv"
