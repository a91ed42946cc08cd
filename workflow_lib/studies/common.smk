# Config validation (before any job starts) and the helpers every study's rules.smk uses: each
# rule states its input and output; its config slice, threads, resources and captions come from
# its study's registry (workflow_lib/studies/<study>/registry.py).
import json
import os
import sys

from snakemake.io import strip_wildcard_constraints

import workflow_lib.studies

from workflow_lib.code_digest import stage_digest
from workflow_lib.config import ConfigError, digest, load_config
from workflow_lib.registry import STUDY_NAMES, rules as registered_rules, studies

try:
    CFG = load_config(config)
except ConfigError as exc:
    sys.stderr.write(f"config error: {exc}\n")
    sys.exit(1)

RESULTS = CFG["results"]
REALISATIONS = list(range(CFG["realisations"]))
THREADS = CFG["compute"]["threads"]
PY = sys.executable
REGISTRY = registered_rules()
STUDY = {each.name: each for each in studies()}
CAPTION = os.path.join(workflow.basedir, "report", "caption.rst")  # renders params.caption
TARGETS = {}  # study -> what it adds to the default target (its rules.smk sets it)


def study_rules(name):
    """The rules.smk of study ``name``, in its folder of the package."""
    return os.path.join(os.path.dirname(workflow_lib.studies.__file__), name, "rules.smk")


def job(name):
    """The ``--job`` JSON of rule ``name``: its input/output paths, the config slice its
    registry entry gives for the wildcards, threads and device."""
    entry = REGISTRY[name]

    def build(wildcards, input, output, threads):
        return json.dumps(
            {
                "input": dict(input.items()),
                "output": dict(output.items()),
                "params": entry.params(CFG, dict(wildcards.items())),
                "threads": threads,
                "device": entry.device(CFG),
            },
            sort_keys=True,
        )

    return build


def threads(name):
    """``compute.threads`` for the rules that use them, else one."""
    return THREADS if REGISTRY[name].threaded else 1


def resources(name):
    """Runtime (minutes) and memory (MB) of rule ``name`` from its registry entry, growing with
    the attempt; a GPU for the rules that use one when ``compute.gpu``."""
    entry = REGISTRY[name]

    def amount(key):
        return lambda wildcards, attempt: entry.resources(CFG, dict(wildcards.items()), attempt)[key]

    gpu = {"gpu": 1} if entry.gpu and CFG["compute"]["gpu"] else {}
    return {"runtime": amount("runtime"), "mem_mb": amount("mem_mb"), **gpu}


def caption(study):
    """The caption of a figure rule's panel, from the study's registry."""
    return lambda wildcards: STUDY[study].panel(wildcards.panel).caption


# The shell command of every registered rule: the stage of the rule's name, with the rule's job
# and log (``derive_stage_directives`` gives it the log).
STAGE = f"{PY} -m workflow_lib stage {{rule}} --job {{params.job:q}} > {{log}} 2>&1"


def config_slice(name):
    """The digest of rule ``name``'s config slice for the wildcards: a param of the wildcards
    alone, so that Snakemake records it and re-runs the job when it changes (the ``job`` param
    also reads the input and output paths, and Snakemake leaves such params out of its
    params trigger)."""
    entry = REGISTRY[name]
    return lambda wildcards: digest(entry.params(CFG, dict(wildcards.items())))


def derive_stage_directives():
    """Give every registered rule (run after all rules are defined) what follows from its name
    and first output ``RESULTS/X.ext``: params ``code`` (the digest of the package files its stage
    function imports, transitively: a code edit re-runs exactly the rules whose stage reaches
    it) and ``config`` (``config_slice``: a config edit re-runs exactly the jobs whose slice it
    changes), log ``RESULTS/logs/X.log`` and benchmark ``RESULTS/benchmarks/X.tsv``; and mark the
    registry's local rules."""
    for each in workflow.rules:
        if each.name not in REGISTRY:
            continue
        output = strip_wildcard_constraints(str(each.output[0]))
        stem = os.path.splitext(os.path.relpath(output, RESULTS))[0]
        each.set_params(code=stage_digest(REGISTRY[each.name].stage),
                        config=config_slice(each.name))
        each.log_modifier = each.benchmark_modifier = each.output_modifier  # as the parser does
        each.set_log(f"{RESULTS}/logs/{stem}.log")
        each.benchmark = f"{RESULTS}/benchmarks/{stem}.tsv"
    workflow.localrules(*(name for name, entry in REGISTRY.items() if entry.local))
