# Config validation (before any job starts) and the helpers every rule uses.
import json
import sys

from workflow_lib.config import ConfigError, load_config, source_digest

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
    """Shell command running stage ``name`` of workflow_lib with the rule's job and log."""
    return f"{PY} -m workflow_lib stage {name} --job {{params.job:q}} > {{log}} 2>&1"
