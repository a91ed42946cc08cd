"""HDF5 artefacts: atomic writes, provenance attributes, schema-checked reads.

Every file carries the attributes ``schema`` (e.g. ``potts-samples/1``), ``created``,
``workflow_lib_version``, ``git_commit``, ``config_digest``, ``config`` (the JSON of the params the
job depended on), ``seeds``, the versions of jax, numpy and h5py, and the compute context that can
change float results: ``jax_backend`` and ``jax_device`` (``cpu`` and ``cpu``, or ``gpu`` and the
GPU's model name: ``workflow_lib.core.backend.describe``), ``xla_flags``, ``host_cpus`` (float32
transformer training differs in its last digits between one and several XLA threads) and
``host_cpu`` (the processor: ``workflow_lib.core.host``). It is
written under a temporary name in the target folder and renamed when complete, so an interrupted
job never leaves a file that looks complete.

The schema tags live with what writes them: each study's in its ``artefacts`` module
(``workflow_lib.studies.<study>.artefacts``), the Potts samples' (read beyond their study) in
``workflow_lib.potts.artefact``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

import workflow_lib
from workflow_lib.core import host
from workflow_lib.core.backend import describe as describe_backend
from workflow_lib.core.config import digest

COMPRESS_ABOVE = 4096  # elements; larger arrays get gzip + shuffle


class ArtefactError(RuntimeError):
    """An input artefact is missing, truncated, foreign or malformed; the message names the file."""


def _git_commit() -> str:
    root = Path(__file__).resolve().parents[2]
    with suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
            timeout=5,
        )
        if out.returncode == 0:
            return out.stdout.strip()
    return "unknown"


def provenance(params: Mapping[str, Any], seeds: Mapping[str, int]) -> dict[str, str]:
    """The provenance attributes of an artefact produced from ``params`` with ``seeds``."""
    import jax

    return {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "workflow_lib_version": workflow_lib.__version__,
        "git_commit": _git_commit(),
        "config_digest": digest(params),
        "config": json.dumps(params, sort_keys=True, default=str),
        "seeds": json.dumps(dict(seeds), sort_keys=True),
        "jax_version": jax.__version__,
        "numpy_version": np.__version__,
        "h5py_version": h5py.__version__,
        **describe_backend(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "host_cpus": str(os.cpu_count()),
        "host_cpu": host.cpu(),
    }


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary name ``.NAME.tmp-PID`` next to ``path`` to write to; rename it to
    ``path`` when the block ends without error, delete it otherwise. Every output of the workflow
    (HDF5, CSV, figures) is written through this."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with suppress(FileNotFoundError):
            tmp.unlink()


def write_csv(df, path: str | Path) -> None:
    """Write the pandas DataFrame ``df`` to ``path`` atomically (no index column)."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def write_artefact(
    path: str | Path,
    schema: str,
    datasets: Mapping[str, Any],
    params: Mapping[str, Any],
    seeds: Mapping[str, int],
    attrs: Mapping[str, Any] | None = None,
) -> Path:
    """Atomically write an HDF5 artefact.

    ``datasets``: name -> array (``/`` in a name makes groups); ``attrs``: extra scalar or string
    root attributes (results, recorded choices). Returns the final path.
    """
    path = Path(path)
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        for name, value in datasets.items():
            arr = np.asarray(value)
            big = arr.size > COMPRESS_ABOVE
            f.create_dataset(name, data=arr, compression="gzip" if big else None, shuffle=big)
        for key, value in {**provenance(params, seeds), **(attrs or {})}.items():
            f.attrs[key] = value
        f.attrs["schema"] = schema
    return path


@dataclass(frozen=True)
class Artefact:
    """An artefact read into memory: ``data`` maps dataset names to arrays."""

    path: Path
    schema: str
    attrs: dict[str, Any]
    data: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]


def _walk(group: h5py.Group, prefix: str = "") -> Iterable[tuple[str, h5py.Dataset]]:
    for name, item in group.items():
        if isinstance(item, h5py.Dataset):
            yield prefix + name, item
        else:
            yield from _walk(item, prefix + name + "/")


def read_artefact(
    path: str | Path, schema: str | None = None, required: Iterable[str] = (),
) -> Artefact:
    """Open an artefact and check it; raise ``ArtefactError`` naming the file and the problem.

    ``schema``: the expected schema tag (e.g. ``potts-samples/1``); ``required``: dataset names
    that must be present.
    """
    path = Path(path)
    if not path.exists():
        raise ArtefactError(f"{path}: no such file")
    if not h5py.is_hdf5(path):
        raise ArtefactError(
            f"{path}: not an HDF5 file (truncated or foreign); delete it and re-run the workflow"
        )
    try:
        with h5py.File(path, "r") as f:
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            data = {name: ds[()] for name, ds in _walk(f)}
    except (OSError, KeyError, ValueError) as exc:
        raise ArtefactError(f"{path}: unreadable HDF5 ({exc}); delete it and re-run") from exc
    found = attrs.get("schema")
    if found is None:
        raise ArtefactError(f"{path}: no 'schema' attribute; not an artefact of this workflow")
    if schema is not None and found != schema:
        raise ArtefactError(f"{path}: schema is {found!r}, expected {schema!r}")
    missing = [name for name in required if name not in data]
    if missing:
        raise ArtefactError(f"{path}: missing dataset(s) {', '.join(missing)} for schema {found}")
    return Artefact(path, found, attrs, data)


def describe(path: str | Path) -> str:
    """A human-readable summary: schema, provenance, datasets with shapes, key figures."""
    art = read_artefact(path)
    lines = [f"{art.path}", f"  schema: {art.schema}"]
    lines += [f"  {k}: {v}" for k, v in sorted(art.attrs.items()) if k not in ("schema",)]
    lines.append("  datasets:")
    for name, arr in sorted(art.data.items()):
        summary = ""
        if arr.dtype.kind in "fiu" and arr.size:
            summary = f"  min {arr.min():.4g}  mean {arr.mean():.4g}  max {arr.max():.4g}"
        lines.append(f"    {name}: {arr.shape} {arr.dtype}{summary}")
    return "\n".join(lines)

