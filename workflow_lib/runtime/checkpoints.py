"""Checkpoints of a job's long loops: a job killed at its allocation's end (SIGTERM, then SIGKILL)
resumes where it stopped and writes the same artefact, to the last bit, as a run never stopped.

A stage with long loops is decorated with ``resumable``. Its job's checkpoint file (``job_spec``:
``<results>/.checkpoints/<first output>.npz``, outside the rule's outputs, so that Snakemake keeps
it when the job fails) is read when the stage starts and removed when it returns, its artefact
written. While it runs, ``current()`` is the job's ``Session``, in which its loops record:

- a loop's carry between two of its compiled chunks, ``boundary(name, step, total, state)``, and
  on start ``resume(name, like)``: the carry of the checkpoint, or None (an outer loop whose
  state lives in its parts records its progress alone, for the log line that says where a job
  resumed: ``resumed at step k of n of NAME``);
- a finished part of the job (an L-BFGS start), ``finish(name, value)``, and on start
  ``result(name, like)``: its value from the checkpoint instead of computing it again;
- the parts' names, ``unit(kind)`` within ``scope(label)``: numbered in the order the job
  reaches them, the same in every run of one config and code.

``state``, ``value`` and ``like`` are pytrees of arrays and Python scalars (parameters, optimiser
state, step, random keys, the history so far); what comes back has the structure of ``like``.
The file is written at a boundary when ``checkpoint_every`` seconds have passed since the last
write (or the start), atomically (a temporary name, fsync, rename), every entry in it; after a
SIGTERM, at the next boundary, after which the job exits with status ``EXIT_STATUS`` (a loop keeps
its compiled chunks short: ``chunk_steps``). A checkpoint is used only when the job's config
slice, stage code, processor, threads, device, XLA flags and numerical libraries are those that
wrote it (``identity``); otherwise, or when the file is unreadable (truncated, corrupt), one log
line says why and the job starts over. ``checkpoints: false`` discards a job's checkpoint and
writes none.

A resumed loop gives the same numbers as one never stopped because each of its chunk programs
takes the chunk's bounds as traced arguments (one compiled program whatever the chunk) and its
random keys derive from the step index, so where a run is cut changes nothing.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import logging
import os
import signal
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from workflow_lib.core import host
from workflow_lib.core.artefacts import atomic_path
from workflow_lib.core.code_digest import stage_digest
from workflow_lib.core.config import digest
from workflow_lib.core.registry import Job

log = logging.getLogger("workflow_lib.runtime.checkpoints")

FOLDER = ".checkpoints"  # under the results folder
FORMAT = 1  # of the file's metadata
META = "meta"  # the member holding the metadata (JSON); the arrays are e<entry>_<leaf>
EXIT_STATUS = 128 + signal.SIGTERM  # a job stopped by SIGTERM, its checkpoint written
IDENTITY = {"config": "config slice", "code": "stage code", "processor": "processor",
            "threads": "threads", "device": "device", "xla_flags": "XLA flags",
            "libraries": "numerical libraries"}  # fmt: skip
"""What must be equal for a checkpoint to be used, and its name in the log line that says not."""


class CheckpointMismatch(RuntimeError):
    """An entry of a checkpoint does not fit the loop that reads it (the message says which)."""


def job_spec(cfg: Mapping[str, Any], results: str, outputs: Mapping[str, str]) -> dict:
    """The ``checkpoint`` of a job JSON (``registry.Job``) whose outputs are ``outputs`` (name ->
    path), in config ``cfg``'s results folder ``results``: ``file``, the first output's path below
    ``results/.checkpoints`` with ``.npz`` for its extension; ``every``, ``checkpoint_every``;
    ``enabled``, ``checkpoints``."""
    first = os.path.relpath(sorted(outputs.values())[0], results)
    return {"file": os.path.join(results, FOLDER, os.path.splitext(first)[0] + ".npz"),
            "every": float(cfg["checkpoint_every"]), "enabled": bool(cfg["checkpoints"])}


def identity(job: Job, target: str) -> dict[str, str]:
    """What a checkpoint of stage ``target`` (``'module:function'``) on ``job`` records and a
    resumed job must match (``IDENTITY``)."""
    import jax
    import jaxlib
    import optax

    return {"config": digest(job.params), "code": _code(target), "processor": host.cpu(),
            "threads": str(job.threads), "device": job.device,
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "libraries": f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, numpy "
                         f"{np.__version__}, optax {optax.__version__}"}  # fmt: skip


@functools.cache
def _code(target: str) -> str:
    """``stage_digest(target)``, once per process (the parts of a job run one stage)."""
    return stage_digest(target)


def chunk_steps(done: int, seconds: float, target: float, cap: int = 1_000_000) -> int:
    """The steps of a loop's next compiled call, about ``target`` seconds at the rate of its last
    (``done`` steps in ``seconds``), 1 to ``cap``: the next boundary is that far away."""
    return max(1, min(int(target * max(done, 1) / max(seconds, 1e-9)), cap))


_terminate = False  # a SIGTERM arrived; the next boundary writes the checkpoint and exits


def _on_sigterm(signum: int, frame: object) -> None:
    global _terminate
    _terminate = True


def _leaves(tree: Any) -> list[np.ndarray]:
    """The leaves of ``tree`` as host arrays, a typed random key as its key data."""
    import jax

    leaves = jax.tree_util.tree_leaves(tree)
    leaves = [jax.random.key_data(x) if _is_key(x) else x for x in leaves]
    return [np.asarray(x) for x in jax.device_get(leaves)]


def _is_key(x: Any) -> bool:
    import jax

    return isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _restore(name: str, stored: list[np.ndarray], like: Any) -> Any:
    """The pytree of ``like``'s structure with the ``stored`` leaves: JAX arrays where ``like``
    has them (a typed key wrapped again), NumPy arrays and Python scalars where it has those;
    ``CheckpointMismatch`` when a leaf's count, shape or dtype differs."""
    import jax
    import jax.numpy as jnp

    leaves, tree = jax.tree_util.tree_flatten(like)
    if len(leaves) != len(stored):
        raise CheckpointMismatch(f"checkpoint entry {name!r} has {len(stored)} arrays, the loop "
                                 f"{len(leaves)}")
    out = []
    for i, (leaf, value) in enumerate(zip(leaves, stored, strict=True)):
        if isinstance(leaf, bool | int | float | str):
            if value.shape:
                raise CheckpointMismatch(f"checkpoint entry {name!r}, leaf {i}: shape "
                                         f"{value.shape} for a scalar")
            out.append(type(leaf)(value.item()))
            continue
        key = _is_key(leaf)
        want = jax.random.key_data(leaf) if key else leaf
        if value.shape != np.shape(want) or value.dtype != want.dtype:
            raise CheckpointMismatch(f"checkpoint entry {name!r}, leaf {i}: {value.dtype}"
                                     f"{list(value.shape)} where the loop has {want.dtype}"
                                     f"{list(np.shape(want))}")
        if key:
            out.append(jax.random.wrap_key_data(value, impl=jax.random.key_impl(leaf)))
        else:
            out.append(jnp.asarray(value) if isinstance(leaf, jax.Array) else value)
    return jax.tree_util.tree_unflatten(tree, out)


class Session:
    """The checkpoint of one job (``session``): what its loops recorded, written to ``path``
    every ``every`` seconds at a boundary; ``path`` None: checkpoints off (nothing is read or
    written, the names are still given). ``saved``: the entries of the checkpoint it resumes
    (key ``'state:NAME'`` or ``'result:NAME'`` -> its record: ``step``, ``total`` and
    ``leaves``), ``where`` its last boundary in words. ``writes``, ``write_seconds`` and
    ``bytes`` (of the last file) say what the writing cost."""

    def __init__(self, path: Path | None, every: float, ident: dict[str, str],
                 saved: dict[str, dict] | None = None,
                 where: str = "at the start") -> None:  # fmt: skip
        self.path, self.every, self.identity = path, every, ident
        self._entries: dict[str, dict] = dict(saved or {})
        self._where = where  # the last boundary, in words
        self._last = time.monotonic()
        self._counters: dict[tuple[str, str], int] = {}
        self._scope: list[str] = []
        self.writes, self.write_seconds, self.bytes = 0, 0.0, 0

    # names
    def unit(self, kind: str) -> str:
        """A fresh name for a part of kind ``kind`` in the current scope: ``'KIND n'``, ``n`` the
        parts of that kind the scope has had before, after the scope's labels."""
        prefix = " / ".join(self._scope)
        n = self._counters.get((prefix, kind), 0)
        self._counters[prefix, kind] = n + 1
        return f"{prefix} / {kind} {n}" if prefix else f"{kind} {n}"

    @contextlib.contextmanager
    def scope(self, label: str) -> Iterator[None]:
        """The parts named inside are named after ``label`` too (a sweep's point, say)."""
        self._scope.append(label)
        try:
            yield
        finally:
            self._scope.pop()

    # loops
    def resume(self, name: str, like: Any) -> tuple[int, Any] | None:
        """The step and the carry (the structure of ``like``) of loop ``name`` at the checkpoint's
        last boundary of it; None without one."""
        entry = self._entries.get(f"state:{name}")
        if entry is None or "leaves" not in entry:
            return None
        return entry["step"], _restore(name, entry["leaves"], like)

    def boundary(self, name: str, step: int, total: int, state: Any = None) -> None:
        """Loop ``name`` is at step ``step`` of ``total`` with carry ``state`` (kept by
        reference: its arrays are copied only when the file is written; None: a loop whose
        state lives in its parts, whose progress alone is recorded). Writes the file when
        ``every`` seconds have passed since the last write, or a SIGTERM has arrived, and then
        exits with ``EXIT_STATUS``."""
        if self.path is None:
            return
        self._entries[f"state:{name}"] = {"step": int(step), "total": int(total), "tree": state}
        self._where = f"at step {step} of {total} of {name}"
        self._maybe_write()

    # finished parts
    def result(self, name: str, like: Any) -> Any | None:
        """The value of finished part ``name`` (the structure of ``like``) from the checkpoint;
        None when it was not finished."""
        entry = self._entries.get(f"result:{name}")
        if entry is None:
            return None
        return _restore(name, entry["leaves"], like) if "leaves" in entry else entry["tree"]

    def finish(self, name: str, value: Any) -> None:
        """Part ``name`` is finished with ``value``: its loop's carry is dropped; a boundary."""
        if self.path is None:
            return
        self._entries.pop(f"state:{name}", None)
        self._entries[f"result:{name}"] = {"tree": value}
        self._where = f"after {name}"
        self._maybe_write()

    # the file
    def _maybe_write(self) -> None:
        global _terminate
        if _terminate:
            _terminate = False
            self.write()
            log.error("SIGTERM: checkpoint %s written %s; exiting with status %d (run the job "
                      "again to resume)", self.path, self._where, EXIT_STATUS)
            raise SystemExit(EXIT_STATUS)
        if time.monotonic() - self._last >= self.every:
            self.write()

    def write(self) -> None:
        """Write every entry to ``path`` (atomically, synced to disk)."""
        start = time.perf_counter()
        arrays, entries = {}, {}
        for i, key in enumerate(self._entries):  # in the order first recorded: outer loops first
            entry = self._entries[key]
            leaves = entry["leaves"] if "leaves" in entry else _leaves(entry["tree"])
            entries[key] = {"index": i, "leaves": len(leaves),
                            **{k: entry[k] for k in ("step", "total") if k in entry}}
            arrays.update({f"e{i}_{j}": leaf for j, leaf in enumerate(leaves)})
        meta = {"format": FORMAT, "identity": self.identity, "where": self._where,
                "written": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "entries": entries}
        with atomic_path(self.path) as tmp, open(tmp, "wb") as f:
            np.savez(f, **{META: np.asarray(json.dumps(meta))}, **arrays)
            f.flush()
            os.fsync(f.fileno())
        self.bytes = self.path.stat().st_size
        self.writes += 1
        self.write_seconds += time.perf_counter() - start
        self._last = time.monotonic()


def read(path: Path) -> tuple[dict, dict[str, dict]]:
    """The metadata and the entries (key -> ``step``, ``total``, ``leaves``) of checkpoint
    ``path``, every array read (so checked against its CRC); ``ValueError`` naming the problem
    when it is unreadable."""
    try:
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f[META]))
            if meta.get("format") != FORMAT:
                raise ValueError(f"format {meta.get('format')!r}, not {FORMAT}")
            entries = {}
            for key, entry in meta["entries"].items():
                i = entry["index"]
                entries[key] = {**{k: entry[k] for k in ("step", "total") if k in entry},
                                "leaves": [f[f"e{i}_{j}"] for j in range(entry["leaves"])]}
            return meta, entries
    except (OSError, EOFError, KeyError, TypeError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}".replace("\n", " ")) from exc


def _open(path: Path, ident: dict[str, str]) -> tuple[dict[str, dict], str]:
    """The entries of the checkpoint at ``path`` and its last boundary in words, if it is
    readable and ``ident`` wrote it, else none (the file removed); one log line says which."""
    start = {}, "at the start"
    if not path.exists():
        log.info("checkpoint %s: none; starting at the beginning", path)
        return start
    try:
        meta, entries = read(path)
    except ValueError as exc:
        log.warning("checkpoint %s is unreadable (truncated or corrupt: %s); starting over",
                    path, exc)
        path.unlink()
        return start
    differ = [key for key in IDENTITY if meta["identity"].get(key) != ident[key]]
    if differ:
        key = differ[0]
        log.warning("checkpoint %s was written with another %s (%s, not %s); starting over",
                    path, IDENTITY[key], meta["identity"].get(key), ident[key])
        path.unlink()
        return start
    loops = [f"at step {entry['step']} of {entry['total']} of {key.removeprefix('state:')}"
             for key, entry in entries.items() if key.startswith("state:")]
    log.info("checkpoint %s (written %s): resumed %s; %d finished parts kept", path,
             meta["written"], ", ".join(loops) or meta["where"],
             sum(key.startswith("result:") for key in entries))
    return entries, meta["where"]


_current: Session | None = None


def current() -> Session:
    """The checkpoint session of the running job; outside ``session``, or with checkpoints
    off, a new one that reads and writes nothing."""
    return _current or Session(None, 0.0, {})


@contextlib.contextmanager
def session(job: Job, target: str) -> Iterator[Session]:
    """The checkpoint ``Session`` of ``job`` (its ``checkpoint``: ``job_spec``) running stage
    ``target`` (``'module:function'``), ``current()`` while the block runs, with SIGTERM
    deferred to the next boundary; the file is removed when the block ends without error. A
    SIGTERM that arrives after the last boundary is delivered when the block ends."""
    global _current, _terminate
    spec = job.checkpoint
    if spec is None:
        yield current()
        return
    path = Path(spec["file"])
    if not spec["enabled"]:
        if path.exists():
            path.unlink()
            log.info("checkpoint %s discarded (checkpoints: false)", path)
        yield current()
        return
    ident = identity(job, target)
    ck = Session(path, float(spec["every"]), ident, *_open(path, ident))
    previous, _terminate, _current = signal.signal(signal.SIGTERM, _on_sigterm), False, ck
    try:
        yield ck
        path.unlink(missing_ok=True)
    finally:
        _current = None
        signal.signal(signal.SIGTERM, previous)
        if _terminate:
            _terminate = False
            signal.raise_signal(signal.SIGTERM)


def resumable(stage: Callable[[Job], None]) -> Callable[[Job], None]:
    """Stage ``stage`` run in its job's checkpoint ``session``; a checkpoint whose entries do
    not fit the loops (``CheckpointMismatch``) is named in one line, removed, and the stage
    starts over."""
    target = f"{stage.__module__}:{stage.__name__}"

    @functools.wraps(stage)
    def run(job: Job) -> None:
        try:
            with session(job, target):
                stage(job)
        except CheckpointMismatch as exc:
            log.warning("%s: %s; starting over", job.checkpoint["file"], exc)
            Path(job.checkpoint["file"]).unlink(missing_ok=True)
            with session(job, target):
                stage(job)

    return run
