"""The studies, found rather than listed: every folder of ``workflow_lib/studies/`` with a
``registry.py`` is a study (a folder whose name starts with ``_`` is none: the template), in the
order its package declares (``ORDER`` in its ``__init__``, read without importing its registry,
which may read the config schema), which the report, the docs, the schema and the Snakefile's
includes follow; and the rules of every study and of none (the report's front page, the run's
manifest), by name.

A new study is therefore its folder and its rules file (``rules/<study>.smk``) alone
(``docs/pipeline.md``, "A new study").
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Mapping, Sequence
from typing import Any

from workflow_lib.core import realisations
from workflow_lib.core.code_digest import stage_digest
from workflow_lib.core.registry import (
    Config,
    Panel,
    Rule,
    Study,
    Wildcards,
    constant,
)

PACKAGE = "workflow_lib.studies"
REGISTRY = "registry"  # the module of a study's folder that holds its ``STUDY``


@functools.cache
def names() -> tuple[str, ...]:
    """The studies' names, in the order their packages declare (``ORDER``); two studies of one
    order, or a study without one, are errors that name them."""
    package = importlib.import_module(PACKAGE)
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        if not info.ispkg or info.name.startswith("_"):
            continue
        if importlib.util.find_spec(f"{PACKAGE}.{info.name}.{REGISTRY}") is None:
            continue
        order = getattr(importlib.import_module(f"{PACKAGE}.{info.name}"), "ORDER", None)
        if not isinstance(order, int):
            raise ValueError(f"{PACKAGE}.{info.name}: its __init__ declares no ORDER (an int: "
                             "its place among the studies)")
        taken = [name for name, other in found.items() if other == order]
        if taken:
            raise ValueError(f"studies {taken[0]} and {info.name} both declare ORDER = {order}; "
                             "give one another place")
        found[info.name] = order
    return tuple(sorted(found, key=found.__getitem__))


@functools.cache
def studies() -> tuple[Study, ...]:
    """Every study's registry, in ``names`` order; a folder whose ``STUDY`` has another name is
    an error that names it."""
    out = []
    for name in names():
        study = importlib.import_module(f"{PACKAGE}.{name}.{REGISTRY}").STUDY
        if study.name != name:
            raise ValueError(f"{PACKAGE}.{name}.{REGISTRY}: the study is named {study.name!r}; "
                             "a study is named after its folder")
        out.append(study)
    return tuple(out)


def _report_params(cfg: Config, wildcards: Wildcards) -> dict[str, Any]:
    """The report page's params, which the page shows: each study's title and citation
    (``texts``), the run's config files as merged (``configfiles``, the ``configfiles`` the rule
    passes) and the Potts paper's target distance (``target_hamming``)."""
    return {"texts": {study.name: [study.title, study.paper] for study in studies()},
            "configfiles": list(wildcards["configfiles"]),
            "target_hamming": cfg["beta_tuning"]["target_hamming"]}


def _manifest_params(cfg: Config, wildcards: Wildcards) -> dict[str, Any]:
    """The manifest's params: the run's shard, config and realisations of the studies it runs
    (``realisations.manifest_params``) and the code digest of each rule of their science
    (``code``: study -> rule -> digest, as the rules files' stages give it)."""
    return {**realisations.manifest_params(cfg, [study(name) for name in wildcards["studies"]]),
            "code": wildcards["code"]}


# Rules of no single study: the report's front page from every study's claims table, and the
# run's manifest (what a snapshot of it records).
SHARED = (Rule("report_page", _report_params, constant(10), constant(2000), local=True),
          Rule("manifest", _manifest_params, constant(10), constant(2000), local=True))


def rules() -> dict[str, Rule]:
    """Every rule, the shared ones and every study's, by name (names are unique)."""
    out: dict[str, Rule] = {}
    for each in (*SHARED, *(r for study in studies() for r in study.rules)):
        if each.name in out:
            raise ValueError(f"rule {each.name!r} is registered twice")
        out[each.name] = each
    return out


def study(name: str) -> Study:
    """The registry of study ``name``."""
    for each in studies():
        if each.name == name:
            return each
    raise KeyError(f"no study {name!r} under workflow_lib/studies/")


def owner(rule: str) -> Study:
    """The study that registers rule ``rule``."""
    for each in studies():
        if any(r.name == rule for r in each.rules):
            return each
    raise KeyError(f"no study registers rule {rule!r}")


def panel(name: str) -> Panel:
    """Panel ``name`` of any study (panel names are unique: they name ``figures/<name>.png``)."""
    found = [each for study in studies() for each in study.panels if each.name == name]
    if len(found) != 1:
        raise KeyError(f"{len(found)} studies have a panel {name!r}; expected one")
    return found[0]


def stage_code(name: str, stage: str, wildcards: Wildcards) -> tuple[str, ...]:
    """The ``'module:function'`` targets whose code a job of rule ``name`` runs: its ``stage``
    (as its rules file names it) and, for a figure job (a ``panel`` wildcard), the panel's draw
    function, for a claims job its study's ``claims_of``."""
    if "panel" in wildcards:
        return stage, panel(wildcards["panel"]).draw
    if rules()[name].kind == "claims":
        return stage, owner(name).claims_of
    return (stage,)


def science_code(names: Sequence[str], stages: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Study -> rule -> the code digest of the stage it runs (``stages``: rule -> its
    ``'module:function'``, as its rules file names it), for every rule of the science of each
    study of ``names`` (``Study.science``): what a run's manifest records."""
    return {name: {rule.name: stage_digest(stages[rule.name]) for rule in study(name).science()}
            for name in names}
