"""The workflow as its rules files state it: the ``Snakefile`` parsed with Snakemake's API under
its default config, and from it the stage function each registered rule runs (the ``stage`` its
rules file names, ``rules/common.smk``'s ``STAGES``) and the outputs it writes. For what reads
the rules outside a Snakemake run: the docs' stage tables, ``python -m workflow_lib rules``, the
Omniglot runner and a failed shard's manifest."""

from __future__ import annotations

import functools
import json
import logging
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workflow_lib.core.studies import names

SNAKEFILE = Path(__file__).resolve().parents[2] / "Snakefile"


@contextmanager
def parsed_workflow(snakefile: Path = SNAKEFILE,
                    configfiles: tuple[str, ...] = ()) -> Iterator[Any]:
    """The workflow ``snakefile`` parsed with its default config and ``configfiles`` over it (as
    ``--configfile`` gives them): Snakemake's ``Workflow`` (its ``rules``, ``globals``), valid
    inside the context."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        OutputSettings,
        Quietness,
        ResourceSettings,
        StorageSettings,
    )

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        settings = ConfigSettings(configfiles=tuple(Path(f).resolve() for f in configfiles))
        yield api.workflow(resource_settings=ResourceSettings(), config_settings=settings,
                           storage_settings=StorageSettings(), snakefile=snakefile,
                           workdir=snakefile.parent)._workflow


@functools.cache
def rules_as_written(snakefile: Path = SNAKEFILE, configfiles: tuple[str, ...] = ()
                     ) -> tuple[str, dict[str, str], dict[str, list[str]]]:
    """``(results folder, registered rule -> its stage function ('module:function'),
    registered rule -> its output patterns)`` of the workflow ``snakefile`` parsed with its
    default config (and ``configfiles``, ``parsed_workflow``); the patterns without wildcard
    constraints, the realisation of a chunk's rule
    (``registry.chunk_rule``) as ``r{r}``."""
    with parsed_workflow(snakefile, configfiles) as workflow:
        registered = workflow.globals["REGISTERED"]
        outputs: dict[str, list[str]] = defaultdict(list)
        for rule in workflow.rules:
            name = registered.get(rule.name, rule.name)
            for f in rule.output:
                pattern = re.sub(r"\{(\w+),[^}]*\}", r"{\1}", str(f))
                if name != rule.name:
                    pattern = re.sub(r"(?<=/)r\d+(?=\.)", "r{r}", pattern)
                if pattern not in outputs[name]:
                    outputs[name].append(pattern)
        return workflow.globals["RESULTS"], dict(workflow.globals["STAGES"]), dict(outputs)


def stage_functions(snakefile: Path = SNAKEFILE,
                    configfiles: tuple[str, ...] = ()) -> dict[str, str]:
    """Registered rule -> the stage function its rules file names (``'module:function'``), the
    workflow parsed as ``rules_as_written`` parses it."""
    return rules_as_written(snakefile, configfiles)[1]


@functools.cache
def example_slices(snakefile: Path = SNAKEFILE) -> tuple[dict[str, Any],
                                                          dict[str, dict[str, Any]]]:
    """``(the default config, registered rule -> the config slice of one of its jobs)`` (the
    first part of a job that runs several), from the jobs the workflow ``snakefile`` plans under
    its default config for its default target and every study's own (a rule named after the
    study): what a rule's slice holds, for the docs. A rule none of those plans is absent."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        Quietness,
        ResourceSettings,
        StorageSettings,
    )


    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        parsed = api.workflow(
            resource_settings=ResourceSettings(), config_settings=ConfigSettings(),
            storage_settings=StorageSettings(), snakefile=snakefile, workdir=snakefile.parent)
        own = {rule.name for rule in parsed._workflow.rules} & set(names())
        workflow = parsed.dag(dag_settings=DAGSettings(targets={"all", *own}, forceall=True)
                              ).workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True,
                              nolock=True)
        log = logging.getLogger("snakemake.logging")
        level = log.level
        log.setLevel(logging.WARNING)  # not its "Building DAG of jobs..."
        try:
            workflow._build_dag()
        finally:
            log.setLevel(level)
        registered = workflow.globals["REGISTERED"]
        out: dict[str, dict[str, Any]] = {}
        for job in sorted(workflow.dag.jobs, key=lambda each: each.rule.name):
            name = registered.get(job.rule.name, job.rule.name)
            if name in out or "job" not in job.rule.params.keys():
                continue
            spec = json.loads(job.params.job)
            out[name] = (spec[0] if isinstance(spec, list) else spec)["params"]
        return workflow.globals["CFG"], out
