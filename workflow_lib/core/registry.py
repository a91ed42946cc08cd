"""What a rule is: the registry types every study declares its rules and panels with.

Each study folder (``workflow_lib/studies/<name>/``) holds a ``registry.py`` with one ``Study``:
for each of its rules the stage function it runs, the config slice it depends on, its resources
(runtime and memory as functions of the config, the wildcards and the attempt), and the study's
tables, figure panels and captions. The study's rules file (``rules/<study>.smk``), the report,
the SLURM submissions and the command line all read it.

Stages take a ``Job``: the rule's input and output paths, the config slice it depends on
(``params``), its seeds, threads and device. Stages read and write artefacts; the science lives
in the other subpackages. Registries describe rules and compute nothing, so code digests do not
follow them (``workflow_lib.core.code_digest``): a change to one shows in the jobs' params and
outputs.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Config = dict[str, Any]
Wildcards = Mapping[str, str]
Params = Callable[[Config, Wildcards], dict[str, Any]]
Amount = Callable[[Config, Wildcards], float]  # before scaling by the attempt


@dataclass(frozen=True)
class Job:
    """``input``/``output``: name -> path; ``params``: the config slice (recorded and hashed);
    ``device``: ``'cpu'`` or ``'gpu'``, the backend the stage runner lets JAX use (``Rule.device``,
    ``workflow_lib.core.backend``); ``checkpoint``: where and how often a stage with long loops
    checkpoints them (``workflow_lib.runtime.checkpoints.job_spec``; None: it does not)."""

    input: dict[str, Any] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    threads: int = 1
    device: str = "cpu"
    checkpoint: dict[str, Any] | None = None


def no_params(cfg: Config, wildcards: Wildcards) -> dict[str, Any]:
    """The config slice of a rule that depends on its inputs alone (tables, figures)."""
    return {}


def panel_params(cfg: Config, wildcards: Wildcards) -> dict[str, Any]:
    """The config slice of a figure rule: the panel it draws."""
    return {"panel": wildcards["panel"]}


def constant(value: float) -> Amount:
    """An amount that does not depend on the config."""
    return lambda cfg, wildcards: value


PER_JOB = "compute.realisations_per_job"
"""The chunk key (``Rule.chunk``) the studies' rules run per realisation share: how many
realisations one job runs, one process start and import for all of them."""

KINDS = ("science", "claims", "figure")
"""What a rule makes: artefacts or tables from its inputs (``science``), a study's claims table
from its tables (``claims``: the stage every study shares, with the study's ``claims_of``), or one
figure panel (``figure``: the stage every study shares, with the panel's ``draw``)."""


@dataclass(frozen=True)
class Rule:
    """One rule of a study (the stage function it runs is named in its rules file, where the
    rule is defined). ``params``: its config slice; ``minutes`` and ``mem_mb``: what one attempt
    needs, from the config and wildcards (the first attempt gets them, the k-th k times as much):
    conservative bounds, whose constants are margins, not measurements (measured times:
    ``docs/performance.md``, ``benchmarks/results/*.csv``); ``threaded``: uses ``compute.threads``
    (else one); ``gpu``: asks for a GPU when ``compute.gpu``; ``local``: runs on the submitting
    host (tables, figures); ``kind``: one of ``KINDS``.

    A rule run once per realisation (``per_realisation`` in ``rules/common.smk``) runs one
    realisation per job unless ``chunk`` names the dotted config key of how many one job runs
    (e.g. ``compute.realisations_per_job``: one process start and import, each program traced
    once); ``side_by_side``: the job fits its chunk's realisations together in one program (not
    in turn), so a shard must start and end on the chunks' bounds to give the whole run's
    numbers (``realisations.check``)."""

    name: str
    params: Params
    minutes: Amount
    mem_mb: Amount
    threaded: bool = False
    gpu: bool = False
    local: bool = False
    kind: str = "science"
    chunk: str = ""
    side_by_side: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"rule {self.name}: kind {self.kind!r} is none of {KINDS}")
        if self.side_by_side and not self.chunk:
            raise ValueError(f"rule {self.name}: side_by_side needs a chunk key")

    def resources(self, cfg: Config, wildcards: Wildcards, attempt: int = 1) -> dict[str, int]:
        """``{'runtime': minutes, 'mem_mb': MB}`` of attempt ``attempt`` (1, 2, ...)."""
        return {"runtime": max(1, math.ceil(attempt * self.minutes(cfg, wildcards))),
                "mem_mb": max(1, math.ceil(attempt * self.mem_mb(cfg, wildcards)))}

    def device(self, cfg: Config) -> str:
        """``'gpu'`` for a rule marked for a GPU when ``compute.gpu`` is on, else ``'cpu'``: the
        backend its jobs run on (the job's ``device``)."""
        return "gpu" if self.gpu and cfg["compute"]["gpu"] else "cpu"


def always(cfg: Config) -> bool:
    """The condition of a panel that every configuration draws."""
    return True


@dataclass(frozen=True)
class Panel:
    """A figure panel: its name (``figures/<name>.png``), the study tables it is drawn from,
    ``draw`` (``'module:function'`` that returns the figure: called with the tables as DataFrames,
    in ``tables`` order, and with the figure rule's other inputs by name), its caption (the
    report's and the results pages') and ``exists`` (whether a config has the panel: the rules
    files ask only for the panels of which it holds)."""

    name: str
    tables: tuple[str, ...]
    draw: str
    caption: str
    exists: Callable[[Config], bool] = always


@dataclass(frozen=True)
class Study:
    """A study: ``name`` (its folder), ``title`` (the report's category), ``paper`` (the
    citation), ``rules`` (among them one ``claims_rule`` and, with panels, one ``figure_rule``),
    ``tables`` (the CSV files its tables rule writes, beside its claims table), ``panels``,
    ``claims`` (its claims table, relative to the results folder), ``claims_of``
    (``'module:function'`` that computes the claims table from the tables: a dict of table name
    -> DataFrame; a DataFrame with every column of ``claims.COLUMNS``), ``page_tables`` (the
    names of the tables shown whole on its results pages) and ``folders`` (the top folders of
    the results its rules write, where Snakemake's benchmarks of its jobs mirror them; default:
    the study's name).

    How its runs split into shards (``workflow_lib.core.realisations``): ``realisations``, the
    dotted config key of the number of its realisations (empty: it has none, and no shard runs it);
    ``shared_tables``, the tables that do not depend on the realisations (every shard writes them
    alike); ``summaries``, the tables computed across realisations from the others, by name:
    ``'module:function'`` that returns one from the dict of the others (table name -> DataFrame).
    Every other table is per realisation: it has a ``realisation`` column."""

    name: str
    title: str
    paper: str
    rules: tuple[Rule, ...]
    tables: tuple[str, ...]
    panels: tuple[Panel, ...]
    claims: str
    claims_of: str
    page_tables: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    realisations: str = ""
    shared_tables: tuple[str, ...] = ()
    summaries: Mapping[str, str] = field(default_factory=dict)

    def table_path(self, name: str) -> str:
        """The path of table ``name``, relative to the results folder (beside the claims)."""
        return f"{self.claims.rsplit('/', 1)[0]}/{name}.csv"

    def rule(self, name: str) -> Rule:
        for each in self.rules:
            if each.name == name:
                return each
        raise KeyError(f"study {self.name} has no rule {name!r}")

    def rule_of(self, kind: str) -> Rule:
        """The study's one rule of ``kind`` (``'claims'``, ``'figure'``)."""
        found = [each for each in self.rules if each.kind == kind]
        if len(found) != 1:
            raise KeyError(f"study {self.name} has {len(found)} {kind} rules; expected one")
        return found[0]

    def panel(self, name: str) -> Panel:
        for each in self.panels:
            if each.name == name:
                return each
        raise KeyError(f"study {self.name} has no panel {name!r}")

    def drawn_panels(self, cfg: Config) -> tuple[Panel, ...]:
        """The panels that config ``cfg`` has (those whose ``exists`` holds)."""
        return tuple(each for each in self.panels if each.exists(cfg))

    def realisation_count(self, cfg: Config) -> int:
        """How many realisations the whole run of ``cfg`` has (its ``realisations`` key; 0 for
        a study without realisations)."""
        return int(config_value(cfg, self.realisations)) if self.realisations else 0

    def realisation_tables(self) -> tuple[str, ...]:
        """Its tables with one row per realisation and more (neither shared nor summaries;
        none for a study without realisations)."""
        if not self.realisations:
            return ()
        return tuple(name for name in self.tables
                     if name not in self.shared_tables and name not in self.summaries)

    def science(self) -> tuple[Rule, ...]:
        """The rules whose jobs its tables come from: all but its claims and figure rules."""
        return tuple(each for each in self.rules if each.kind == "science")


def claims_rule(name: str, study: str) -> Rule:
    """Rule ``name``: the claims table of study ``study`` from its tables, on the submitting
    host; its config slice is the study's name."""
    return Rule(name, lambda cfg, wildcards: {"study": study}, constant(10), constant(2000),
                local=True, kind="claims")


def figure_rule(name: str) -> Rule:
    """Rule ``name``: one panel of a study (the ``panel`` wildcard), on the submitting host."""
    return Rule(name, panel_params, constant(10), constant(2000), local=True, kind="figure")


def resolve(target: str) -> Callable[..., Any]:
    """The function ``target`` (``'module:function'``) names."""
    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)


def config_value(cfg: Config, key: str) -> Any:
    """The value of the dotted config ``key`` (e.g. ``'compute.realisations_per_job'``)."""
    node: Any = cfg
    for part in key.split("."):
        node = node[part]
    return node


def chunk_size(rule: Rule, cfg: Config) -> int:
    """How many realisations one job of ``rule`` runs: its ``chunk`` key's value, else one."""
    return int(config_value(cfg, rule.chunk)) if rule.chunk else 1


def chunks(realisations: Sequence[int], size: int) -> list[list[int]]:
    """``realisations`` in consecutive chunks of ``size`` (the last may be shorter): those one job
    of a chunked rule runs (``Rule.chunk``)."""
    return [list(realisations[i:i + size]) for i in range(0, len(realisations), size)]


def chunk_label(chunk: Sequence[int]) -> str:
    """``r3`` for one realisation, ``r0-9`` for a chunk: the name of its log and benchmark."""
    return f"r{chunk[0]}" if len(chunk) == 1 else f"r{chunk[0]}-{chunk[-1]}"


def chunk_rule(name: str, chunk: Sequence[int]) -> str:
    """The Snakemake rule of registered rule ``name`` for ``chunk``: ``potts_train_r3``,
    ``potts_train_r0_9`` (one rule per chunk, since a rule's outputs are fixed patterns)."""
    return f"{name}_{chunk_label(chunk).replace('-', '_')}"
