"""Shards: a run cut into ranges of realisations that run, and are snapshotted, one at a time.

The config key ``shard: FIRST-LAST`` (e.g. ``0-4``, both ends included; null: the whole run)
restricts a run to the realisations FIRST to LAST of every study that has realisations
(``Study.realisations``: ``realisations`` for the Potts paper, ``paths.realisations`` for the
attention paths, ``proteins.realisations`` for the protein study). A realisation keeps its id, and
its id drives its seeds, so each realisation's jobs, with their config slices, and numbers are
those of the whole run; the Potts paper's training chunks (``compute.realisations_per_job``) are
the whole run's too, since a shard starts and ends on their bounds (``check``). A study with no
realisation in the range, and a study without realisations (Omniglot), is left out of the shard.

Every study's tables are written in one order whatever the shard (``finish_tables``): the tables
with one row per realisation and more, sorted by realisation (stably: within a realisation the
rows keep the order its jobs give them), then the summaries across realisations computed from
them. Concatenating the shards' per-realisation tables and sorting them by realisation therefore
gives the whole run's tables to the last digit, and its summaries follow
(``workflow_lib.shards.snapshots``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workflow_lib.core.errors import ConfigError
from workflow_lib.core.registry import Config, Study, chunk_label, chunk_size, resolve

if TYPE_CHECKING:
    import pandas as pd

REALISATION = "realisation"  # the column of a per-realisation table
MANIFEST = "manifest.json"  # a run's manifest in its results folder (workflow_lib.shards.manifest)
RUN_KEYS = ("shard", "shard_studies", "results")  # keys that change no number: not in the digest


def parse(shard: str) -> range:
    """The realisation ids of shard ``FIRST-LAST``: ``range(FIRST, LAST + 1)``."""
    first, last = (int(part) for part in shard.split("-"))
    return range(first, last + 1)


def label(shard: str) -> str:
    """The name of shard ``FIRST-LAST``: ``rFIRST-LAST`` (``rFIRST`` for one realisation), as
    the chunks' (``registry.chunk_label``)."""
    return chunk_label(list(parse(shard)))


def shard_range(cfg: Config) -> range | None:
    """The realisation ids of ``cfg``'s shard, or None for a whole run."""
    return None if cfg["shard"] is None else parse(cfg["shard"])


def realisations(cfg: Config, study: Study) -> list[int]:
    """The ids of ``study``'s realisations in the run of ``cfg``: every one of the whole run, or
    those in its shard (none for a study without realisations in a shard, or not among its
    ``shard_studies``)."""
    ids = shard_range(cfg)
    if ids is not None and study.name not in (cfg["shard_studies"] or [study.name]):
        return []
    return [r for r in range(study.realisation_count(cfg)) if ids is None or r in ids]


def snapshot_name(shard: str, studies_: list[str] | None) -> str:
    """The folder of a shard's snapshot: its ``label``, followed by ``.STUDY+STUDY`` when it holds
    only some studies (``shard_studies``, or ``docs --study``), so that shards of one range but
    other studies land beside each other."""
    return label(shard) + ("" if studies_ is None else "." + "+".join(sorted(studies_)))


def check(cfg: Config, studies: Sequence[Study]) -> None:
    """Raise ``ConfigError`` (one line naming the key, its value and what is allowed) unless the
    shard of ``cfg`` lies within the realisations of ``studies`` (every study) and starts and
    ends on the bounds of the chunks of every rule of a study it runs that fits its chunk's
    realisations side by side (``Rule.side_by_side``), as the whole run's jobs do."""
    ids = shard_range(cfg)
    sharded = [study.name for study in studies if study.realisations]
    for i, name in enumerate(cfg["shard_studies"] or []):
        if name not in sharded:
            raise ConfigError(f"shard_studies.{i} = {json.dumps(name)}: must be one of "
                              + ", ".join(json.dumps(n) for n in sharded))
    if ids is None:
        if cfg["shard_studies"] is not None:
            raise ConfigError(f"shard_studies = {json.dumps(cfg['shard_studies'])}: only with "
                              "shard (FIRST-LAST); null for a whole run")
        return
    text = f"shard = {json.dumps(cfg['shard'])}"
    if not ids:
        raise ConfigError(f"{text}: FIRST must not exceed LAST")
    counts = {study.realisations: study.realisation_count(cfg) for study in studies
              if study.realisations}
    most = max(counts.values())
    if ids[-1] >= most:
        known = ", ".join(f"{key} = {n}" for key, n in counts.items())
        raise ConfigError(f"{text}: must lie within realisations 0-{most - 1}, the most of any "
                          f"study ({known})")
    for study in studies:
        if study.name not in (cfg["shard_studies"] or [study.name]):
            continue
        n = study.realisation_count(cfg)
        for rule in study.rules:
            if not rule.side_by_side:
                continue
            size = chunk_size(rule, cfg)
            starts = ids[0] < n and ids[0] % size
            ends = ids[-1] < n - 1 and (ids[-1] + 1) % size
            if starts or ends:
                raise ConfigError(f"{text}: {rule.chunk} = {size} runs realisations 0-{size - 1}, "
                                  f"{size}-{2 * size - 1}, ... of rule {rule.name} side by side "
                                  "in one job each; a shard must start and end on those bounds, "
                                  "as the whole run's jobs")


def in_order(table: pd.DataFrame) -> pd.DataFrame:
    """A per-realisation ``table`` sorted by realisation, stably, with a fresh index."""
    return table.sort_values(REALISATION, kind="stable").reset_index(drop=True)


def finish_tables(study: Study, tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """``study``'s tables as written, from ``tables`` (its per-realisation and shared tables, by
    name): each per-realisation table in realisation order (``in_order``), the shared tables as
    given, then each of its ``summaries`` computed from those."""
    out = {name: in_order(tables[name]) if name in study.realisation_tables() else tables[name]
           for name in tables}
    for name, target in study.summaries.items():
        out[name] = resolve(target)(dict(out))
    return out


def manifest_params(cfg: Config, studies: Sequence[Study]) -> dict[str, Any]:
    """The config slice of the run's manifest (``workflow_lib.shards.manifest``) over the studies
    it runs: the shard (None for a whole run), the config without ``RUN_KEYS`` and each study's
    realisations in the run."""
    config = {key: value for key, value in cfg.items() if key not in RUN_KEYS}
    return {"shard": cfg["shard"], "shard_studies": cfg["shard_studies"], "config": config,
            "realisations": {study.name: realisations(cfg, study) for study in studies}}
