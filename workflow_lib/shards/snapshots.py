"""The snapshots of shards (``workflow_lib.core.realisations``): a shard's snapshot, and the merge
of a run's shard snapshots into its snapshot.

``python -m workflow_lib docs --preset NAME --results RESULTS`` on the results of a shard (its
manifest, ``workflow_lib.shards.manifest``, names one) writes the shard's snapshot
``docs/results/NAME/shards/<name>/`` (``snapshot_shard``; ``shards.snapshot_name``): the
manifest with the config files and targets the command names, each study's per-realisation
and shared tables under ``tables/<study>/`` and the measured costs of the shard's jobs
(``<study>-costs.csv``).
``python -m workflow_lib docs --preset NAME --merge`` merges a run's shard snapshots into its
snapshot ``docs/results/NAME/`` (``merge_shards``), each study of them as ``pages.snapshot``
writes it from a whole run: per-realisation tables concatenated and sorted by realisation,
shared tables taken once (every shard's alike: ``shared_table``), summaries and claims
recomputed, figures redrawn from the tables, job costs summed over the shards.

A realisation whose stage reports that its protocol cannot be met (the stage's log ends in an
``error:`` line, the same on a re-run: e.g. no inverse temperature that samples the target
Hamming distance) is recorded, not dropped: ``docs --preset NAME --results RESULTS --failed
FIRST-LAST`` writes the snapshot of such a shard (``snapshot_failed``), the manifest naming each
realisation's failed job and its error, the costs of the jobs that ran, no tables. The merge
counts it as started (no gap), leaves it out of the tables and lists every started realisation
in ``tables/<study>/started.csv`` (``study_claims.STARTED``), from which the claims table's check
``run.started`` is computed (``study_claims``) and the page lists the failures.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workflow_lib.claims.study import STARTED
from workflow_lib.core.artefacts import atomic_path, write_csv
from workflow_lib.core.config import study_keys
from workflow_lib.core.errors import ShardError
from workflow_lib.core.realisations import (
    MANIFEST,
    REALISATION,
    RUN_KEYS,
    finish_tables,
    manifest_params,
    parse,
    realisations,
    snapshot_name,
)
from workflow_lib.core.registry import Config, Panel, Study, resolve
from workflow_lib.core.studies import science_code, studies
from workflow_lib.core.workflow import stage_functions
from workflow_lib.pages.results import job_costs, job_realisations, recompute_claims
from workflow_lib.shards.manifest import record as manifest_record

SHARDS = "shards"  # the folder of a run's shard snapshots, in its snapshot
ERROR = "error: "  # how a stage's log ends when the stage reports why it failed (__main__)
# How alike every shard's copy of a table that does not depend on the realisations must be:
# relative to the column's scale, far above the last digits that a different build of NumPy or
# SciPy moves (about 1e-14 in the replica theory's table), far below a change of config or code.
SHARED_RTOL = 1e-9


def _write_json(path: Path, record: dict[str, Any]) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_manifest(results: Path) -> dict[str, Any] | None:
    """The manifest of the run in ``results`` (``workflow_lib.shards.manifest``), or None (a run
    from before manifests)."""
    path = results / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else None


def _ranges(ids: Iterable[int]) -> str:
    """Realisation ids as ranges: ``0-4, 7``."""
    runs: list[list[int]] = []
    for r in sorted(ids):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else f"{run[0]}" for run in runs)


def shard_costs(costs: pd.DataFrame, study: Study, ids: Iterable[int]) -> pd.DataFrame:
    """The rows of ``costs`` (``pages.job_costs``) of the jobs a shard of ``study`` over
    realisations ``ids`` runs: those of its realisations and those of none, but the study's
    figures and claims (a shard has neither)."""
    claims = study.claims.rsplit(".", 1)[0]
    keep = [job != claims and not job.startswith("figures/") and job_realisations(job) <= set(ids)
            for job in costs["job"]]
    return costs[keep].reset_index(drop=True)


def _check_finished(results: Path, study: Study, ids: list[int]) -> None:
    """Raise ``ShardError`` unless ``study``'s tables in ``results`` are older than the run's
    manifest (a run that rebuilt tables without its default target has a stale one) and its
    per-realisation tables hold the realisations ``ids`` of the manifest, and no other."""
    written, found = (results / MANIFEST).stat().st_mtime, set()
    for name in study.tables:
        path = results / study.table_path(name)
        if not path.is_file() or path.stat().st_mtime > written:
            raise ShardError(f"{path} is missing or newer than {results / MANIFEST}: run the "
                             "shard's default target to the end before its snapshot")
        if name in study.realisation_tables():
            found |= set(pd.read_csv(path)[REALISATION].astype(int))
    if found != set(ids):
        raise ShardError(f"{results}: the tables of {study.name} hold realisations "
                         f"{_ranges(found) or 'none'}, its manifest {_ranges(ids)}; run the "
                         "shard's default target to the end before its snapshot")


def _replace_folder(build: Path, dest: Path) -> None:
    """Put the folder ``build`` in place of ``dest`` (a rename each: no half-written ``dest``)."""
    old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
    if dest.exists():
        dest.rename(old)
    build.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


def snapshot_shard(results: Path, run: Path, record: dict[str, Any], source: dict[str, Any],
                   only: tuple[str, ...] = ()) -> Path:
    """Write the snapshot of the shard in ``results`` (``record``: its manifest) under the run's
    snapshot ``run`` as ``shards/<name>/`` (``shards.snapshot_name``; replacing an earlier one):
    the manifest with ``source`` (the config files and targets of the run) and, for each study
    of the shard (of ``only`` when given), its per-realisation and shared tables under
    ``tables/<study>/`` and its jobs' measured costs (``shard_costs``) as
    ``<study>-costs.csv``; returns its folder."""
    names = [name for name in record["realisations"] if not only or name in only]
    by_name = {study.name: study for study in studies()}
    for name in names:
        _check_finished(results, by_name[name], record["realisations"][name])
    part = record.get("shard_studies") is not None or bool(only)
    dest = run / SHARDS / snapshot_name(record["shard"], names if part else None)
    build = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(build, ignore_errors=True)
    for name in names:
        study, ids = by_name[name], record["realisations"][name]
        tables = build / "tables" / name
        tables.mkdir(parents=True)
        for table in (*study.realisation_tables(), *study.shared_tables):
            shutil.copy2(results / study.table_path(table), tables / f"{table}.csv")
        costs = shard_costs(job_costs(results, study), study, ids)
        if len(costs):
            costs.to_csv(build / f"{name}-costs.csv", index=False)
    keep = {key: value for key, value in record.items() if key not in ("realisations", "code")}
    _write_json(build / MANIFEST, {**keep, "source": source,
                                   "realisations": {n: record["realisations"][n] for n in names},
                                   "code": {n: record["code"][n] for n in names}})
    dest.parent.mkdir(parents=True, exist_ok=True)
    _replace_folder(build, dest)
    return dest


def failures(results: Path, study: Study, ids: Iterable[int]) -> dict[int, str]:
    """The realisations of ``ids`` with a job of ``study`` in the run in ``results`` whose log
    ends in an ``error:`` line (a failure its stage reported), each with ``JOB: ERROR`` of its
    newest such log (``JOB``: the log's path under ``logs/`` without the extension); a chunk's
    job (``r0-2``) names each of its realisations."""
    logs, found = results / "logs", {}
    paths = [p for folder in study.folders or (study.name,) for p in (logs / folder).rglob("*.log")]
    for path in sorted(paths, key=lambda p: (p.stat().st_mtime, p.as_posix())):  # newest last
        job = path.relative_to(logs).with_suffix("").as_posix()
        lines = path.read_text(errors="replace").strip().splitlines()
        if lines and lines[-1].startswith(ERROR):
            for r in job_realisations(job) & set(ids):
                found[r] = f"{job}: {lines[-1].removeprefix(ERROR)}"
    return found


def snapshot_failed(results: Path, run: Path, cfg: Config, source: dict[str, Any],
                    only: tuple[str, ...] = ()) -> Path:
    """Write the snapshot of the shard of ``cfg`` (its key ``shard``) whose every realisation
    failed in the run in ``results`` (``failures``) under the run's snapshot ``run`` as
    ``shards/<name>/``: the manifest the run would have written (``run_manifest.record``, of the
    code installed) with ``source`` and ``failed`` (study -> realisation -> ``JOB: ERROR``) and
    each study's measured job costs; no tables. ``ShardError`` when a realisation of it has no
    failed job (run it; a shard that mixes failed and finished realisations is run again as
    shards of each)."""
    if Path(cfg["results"]).resolve() != results.resolve():
        raise ShardError(f"--results {results}: the config's results folder is {cfg['results']}; "
                         "give the config files (and keys) the failed run was given")
    names = [study.name for study in studies()
             if realisations(cfg, study) and (not only or study.name in only)]
    if not names:
        raise ShardError(f"--failed {cfg['shard']}: no study has realisations in it")
    by_name = {study.name: study for study in studies()}
    failed = {}
    for name in names:
        ids = realisations(cfg, by_name[name])
        found = failures(results, by_name[name], ids)
        missing = [r for r in ids if r not in found]
        if missing:
            raise ShardError(f"{results}: no job of {name} in realisations {_ranges(missing)} "
                             f"ends its log in an error line; --failed records a shard whose "
                             "every realisation failed in a stage that said why: run it, or "
                             "cut the realisations that finish into shards of their own (--study "
                             "names the studies whose realisations failed)")
        failed[name] = {str(r): found[r] for r in ids}
    params = manifest_params(cfg, [by_name[name] for name in names])
    stages = stage_functions(configfiles=tuple(source["configs"]))
    record = manifest_record({**params, "code": science_code(names, stages)})
    part = cfg["shard_studies"] is not None or bool(only)
    dest = run / SHARDS / snapshot_name(cfg["shard"], names if part else None)
    build = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    for name in names:
        costs, ids = job_costs(results, by_name[name]), set(record["realisations"][name])
        costs = costs[[bool(job_realisations(job) & ids) for job in costs["job"]]]
        if len(costs):  # the jobs of its realisations that ran
            costs.to_csv(build / f"{name}-costs.csv", index=False)
    _write_json(build / MANIFEST, {**record, "source": source, "failed": failed})
    dest.parent.mkdir(parents=True, exist_ok=True)
    _replace_folder(build, dest)
    return dest


def _difference(a: Any, b: Any, key: str = "") -> tuple[str, Any, Any] | None:
    """The first dotted key whose value differs between configs ``a`` and ``b``, with the two
    values (None where one has no such key), or None when they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for sub in sorted(a.keys() | b.keys()):
            found = _difference(a.get(sub), b.get(sub), f"{key}.{sub}" if key else sub)
            if found:
                return found
        return None
    return None if a == b else (key, a, b)


def _shard_records(run: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    """``(name, folder, manifest)`` of each shard snapshot of the run's snapshot ``run``
    (``shards/<name>``), in the order of their first realisation."""
    folders = sorted(p.parent for p in (run / SHARDS).glob(f"*/{MANIFEST}"))
    if not folders:
        raise ShardError(f"{run / SHARDS}: no shard snapshots; write them with python -m "
                         f"workflow_lib docs --preset {run.name} --results RESULTS after each "
                         "shard")
    records = [(f"{SHARDS}/{p.name}", p, json.loads((p / MANIFEST).read_text())) for p in folders]
    return sorted(records, key=lambda each: (parse(each[2]["shard"])[0], each[0]))


def _check_alike(holders: list[tuple[str, Path, dict[str, Any]]], study: Study) -> None:
    """Raise ``ShardError`` naming the shard and the key unless every shard of ``study`` ran
    the first's config on the keys the study reads (``config.study_keys``; ``shards.RUN_KEYS``
    aside) and its code: a change to another study's section leaves its shards mergeable."""
    (ref, _, first), *others = holders
    keys = [key for key in study_keys(study.name) if key not in RUN_KEYS]
    for name, _, record in others:
        found = _difference({k: record["config"].get(k) for k in keys},
                            {k: first["config"].get(k) for k in keys})
        if found:
            key, mine, theirs = found
            raise ShardError(f"{name}: config key {key} = {json.dumps(mine)} differs from "
                             f"{ref}'s {json.dumps(theirs)}; the shards of {study.name} share "
                             "every key it reads but shard and results")
        found = _difference(record["code"][study.name], first["code"][study.name])
        if found:
            rule, mine, theirs = found
            raise ShardError(f"{name}: the code of rule {rule} of {study.name} (digest {mine}) "
                             f"differs from {ref}'s ({theirs}); run the shards of a run with "
                             "one version of the code")


def _holders(records: list[tuple[str, Path, dict[str, Any]]],
             study: Study) -> list[tuple[str, Path, dict[str, Any]]]:
    """The shards that hold ``study`` (none: it is not merged); raise ``ShardError`` when they
    ran another config or code (``_check_alike``), two hold one realisation or they leave a
    gap: they must hold realisations 0 to k - 1 of the whole run, k at most its count (a run
    merged as far as its shards have come: every realisation started counts, none is
    picked)."""
    holders = [each for each in records if study.name in each[2]["realisations"]]
    if not holders:
        return []
    _check_alike(holders, study)
    cfg = _run_config(holders)
    seen: dict[int, str] = {}
    for name, _, record in holders:
        for r in record["realisations"][study.name]:
            if r in seen:
                raise ShardError(f"{name}: realisation {r} of {study.name} is also in "
                                 f"{seen[r]}; each realisation belongs to one shard")
            seen[r] = name
    missing = set(range(max(seen) + 1)) - seen.keys()
    if missing:
        raise ShardError(f"{SHARDS}: no shard holds realisations {_ranges(missing)} of "
                         f"{study.name}, below {_ranges([max(seen)])} ({study.realisations} = "
                         f"{study.realisation_count(cfg)}); the shards merge from realisation 0 "
                         "on without a gap: snapshot the missing shards first")
    return holders


def _run_config(holders: list[tuple[str, Path, dict[str, Any]]]) -> dict[str, Any]:
    """The config of the whole run that a study's shards ``holders`` are part of."""
    return {**holders[0][2]["config"], "shard": None}


def _merged_tables(holders: list[tuple[str, Path, dict[str, Any]]],
                   study: Study) -> dict[str, pd.DataFrame]:
    """``study``'s tables from its shards that hold them (not the failed ones): per-realisation
    tables concatenated in shard order, shared tables taken once (``ShardError`` unless alike in
    every shard), then ``realisations.finish_tables`` (realisation order, summaries)."""
    folders = [(name, folder / "tables" / study.name) for name, folder, _ in holders
               if (folder / "tables" / study.name).is_dir()]  # a failed shard has none
    tables = {}
    for table in study.realisation_tables():
        frames = [pd.read_csv(folder / f"{table}.csv") for _, folder in folders]
        filled = [frame for frame in frames if len(frame)] or frames[:1]
        tables[table] = pd.concat(filled, ignore_index=True)
    for table in study.shared_tables:
        tables[table] = shared_table(study.name, table, folders)
    return finish_tables(study, tables)


def shared_table(study: str, table: str, folders: list[tuple[str, Path]]) -> pd.DataFrame:
    """Table ``table`` of ``study`` that does not depend on the realisations (the replica
    theory's), which every shard computes again, from the first of ``folders`` (shard name, its
    tables folder) once every other shard's is found alike (``_differing_column``):
    ``ShardError`` naming the shard, the table and the column otherwise."""
    (ref, first), *others = folders
    base = pd.read_csv(first / f"{table}.csv")
    for name, folder in others:
        column = _differing_column(base, pd.read_csv(folder / f"{table}.csv"))
        if column is not None:
            raise ShardError(f"{name}: table {study}/{table}.csv differs from {ref}'s in "
                             f"{column}; it does not depend on the realisations, so every shard "
                             f"must write it alike (floats to {SHARED_RTOL:g} of their column's "
                             "scale)")
    return base


def _differing_column(a: pd.DataFrame, b: pd.DataFrame) -> str | None:
    """The first column in which tables ``a`` and ``b`` differ (``"its columns"``, ``"its
    rows"``), or None: floats alike within ``SHARED_RTOL`` of the column's largest magnitude in
    ``a`` (the last digits a different build of the numerical libraries moves), anything else
    equal."""
    if list(a.columns) != list(b.columns):
        return "its columns"
    if len(a) != len(b):
        return "its rows"
    for column in a.columns:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        if x.dtype.kind == "f" and y.dtype.kind == "f":
            scale = float(np.nanmax(np.abs(x), initial=0.0))
            alike = np.allclose(x, y, rtol=0.0, atol=SHARED_RTOL * scale, equal_nan=True)
        else:
            alike = a[column].equals(b[column])
        if not alike:
            return f"column {column}"
    return None


def started(holders: list[tuple[str, Path, dict[str, Any]]], study: Study) -> pd.DataFrame:
    """The realisations of ``study`` its shards started, in order: columns ``realisation`` and
    ``failure`` (``JOB: ERROR`` of a failed one, ``snapshot_failed``; empty for one with
    tables)."""
    rows = [(r, record.get("failed", {}).get(study.name, {}).get(str(r), ""))
            for _, _, record in holders for r in record["realisations"][study.name]]
    return pd.DataFrame(sorted(rows), columns=[REALISATION, "failure"])


def _merged_costs(holders: list[tuple[str, Path, dict[str, Any]]],
                  study: Study) -> pd.DataFrame:
    """The job costs of ``study``'s shards summed per job (wall and CPU seconds; the largest
    memory); a job measured alike in several shards (one benchmark, read from one results
    folder) counts once."""
    paths = [folder / f"{study.name}-costs.csv" for _, folder, _ in holders]
    frames = [pd.read_csv(path) for path in paths if path.is_file()]
    if not frames:
        return pd.DataFrame()
    grouped = pd.concat(frames, ignore_index=True).drop_duplicates().groupby("job", sort=True)
    return grouped.agg(wall_s=("wall_s", "sum"), cpu_s=("cpu_s", "sum"),
                       max_rss_mb=("max_rss_mb", "max")).reset_index()


def _drawn_from_tables(panel: Panel) -> bool:
    """Whether ``panel`` is drawn from its tables alone (not from artefacts, as Fig. 2b)."""
    if not panel.tables:
        return False
    try:
        inspect.signature(resolve(panel.draw)).bind(*panel.tables)
    except TypeError:
        return False
    return True


def _redraw(run: Path, study: Study, cfg: dict[str, Any]) -> None:
    """``study``'s figures in the snapshot ``run`` redrawn from its tables there: the panels that
    ``cfg`` has and that are drawn from tables alone; the others removed."""
    from workflow_lib.core.plotting import save_figure  # matplotlib, for a merge only

    for panel in study.panels:
        png = run / "figures" / f"{panel.name}.png"
        png.unlink(missing_ok=True)
        if panel.exists(cfg) and _drawn_from_tables(panel):
            tables = [pd.read_csv(run / "tables" / study.name / f"{t}.csv") for t in panel.tables]
            save_figure(resolve(panel.draw)(*tables), {"png": str(png)})


def merge_shards(run: Path, only: tuple[str, ...] = ()) -> list[str]:
    """Merge the shard snapshots of the run's snapshot ``run`` (``shards/*/``) into it; returns
    the studies merged (those of ``only`` when given).

    Refuses, with one line naming the shard and the key and before writing anything, shards of
    another config or code (``_check_alike``), a realisation in two shards and a gap in the
    realisations 0 to k - 1 they hold (``_holders``), and shared tables that differ
    (``_merged_tables``).
    Then for each study: its tables as a whole run writes them and the table of its started
    realisations (``started``), its claims table recomputed from them
    (``pages.recompute_claims``), its figures redrawn (``_redraw``), its job costs summed over
    the shards (``_merged_costs``) and its ``source.json``: the first shard's config files and
    targets, the shards, the realisations started and planned, the failed ones, the config's
    digest and the code's."""
    records = _shard_records(run)
    merged = []
    for study in studies():
        holders = _holders(records, study) if not only or study.name in only else []
        if any((folder / "tables" / study.name).is_dir() for _, folder, _ in holders):
            # a study whose every shard failed has no tables to merge (its shards stay listed)
            merged.append((study, holders, _merged_tables(holders, study),
                           _merged_costs(holders, study)))
    for study, holders, tables, costs in merged:
        build = run / "tables" / f".{study.name}.tmp-{os.getpid()}"
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        for name, df in {**tables, STARTED: started(holders, study)}.items():
            df.to_csv(build / f"{name}.csv", index=False)
        _replace_folder(build, run / "tables" / study.name)
        with atomic_path(run / f"{study.name}-claims.csv") as tmp:
            tmp.write_text(recompute_claims(run, study))
        (run / f"{study.name}-costs.csv").unlink(missing_ok=True)
        if len(costs):
            write_csv(costs, run / f"{study.name}-costs.csv")
        (run / "figures").mkdir(exist_ok=True)
        cfg = _run_config(holders)
        _redraw(run, study, cfg)
        first = holders[0][2]
        _write_json(run / f"{study.name}-source.json", {
            **first["source"], "shards": [path.name for _, path, _ in holders],
            "realisations": [sum(len(record["realisations"][study.name])
                                 for _, _, record in holders), study.realisation_count(cfg)],
            "failed": {r: why for _, _, record in holders
                       for r, why in record.get("failed", {}).get(study.name, {}).items()},
            "config_digest": first["config_digest"], "code": first["code"][study.name]})
    return [study.name for study, *_ in merged]
