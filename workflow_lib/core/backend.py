"""The JAX backend of a job: the one it may use, the check that it got it, and its name.

A job runs on ``"gpu"`` when its rule is marked for a GPU (``Rule.gpu``) and ``compute.gpu`` is
on, else on ``"cpu"`` (``Rule.device``). ``select`` runs before JAX starts its backend: a CPU job
sees the CPU alone, even where a CUDA JAX is installed and a GPU is visible; a GPU job sees CUDA
(and the CPU as its host) and allocates GPU memory as it needs it, so that several jobs share one
GPU. ``require`` then stops a GPU job that found no GPU with one line saying what to install,
where JAX would fall back to the CPU. ``describe`` names the backend and device in artefacts and
benchmark rows. ``set_jax_option`` sets JAX's options without importing JAX, so that a job
imports it only if it computes with it; the options then reach the processes the job starts.
"""

from __future__ import annotations

import os
import sys

DEVICES = ("cpu", "gpu")
CUDA_INSTALL = "pip install -e '.[cuda12]'"
PLATFORMS = {"cpu": "cpu", "gpu": "cuda,cpu"}  # JAX's platforms per job device, in priority order


class BackendError(RuntimeError):
    """A job cannot run on the device it asks for; the message is one line for the user."""


def select(device: str) -> None:
    """Let JAX use only the platforms of ``device`` (``'cpu'`` or ``'gpu'``); for ``'gpu'``,
    allocate device memory on demand instead of preallocating most of the GPU
    (``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless the environment sets it, e.g. to ``true``
    with ``XLA_PYTHON_CLIENT_MEM_FRACTION`` for a fixed share per job). Must run before JAX
    starts its backend."""
    if device not in DEVICES:
        raise BackendError(f"job device = {device!r}: must be one of {', '.join(DEVICES)}")
    if device == "gpu":
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    set_jax_option("jax_platforms", PLATFORMS[device])


def require(device: str, what: str) -> None:
    """For ``device == 'gpu'``, start JAX's backend and raise ``BackendError`` naming ``what``
    (``rule NAME``) and what to install when JAX starts without a GPU: no visible GPU, or one
    that JAX cannot start (no CUDA JAX installed, or CUDA failing), with JAX's reason."""
    if device != "gpu":
        return
    import jax

    try:
        found, reason = jax.default_backend(), "finds none"
    except RuntimeError as exc:  # JAX's reason, without its advice on JAX_PLATFORMS
        found = ""
        reason = f"cannot start CUDA ({str(exc).splitlines()[0].split(' (set JAX_PLATFORMS')[0]})"
    if found != "gpu":
        raise BackendError(
            f"{what} runs on a GPU (compute.gpu: true), but JAX {reason}: install a CUDA JAX "
            f"with {CUDA_INSTALL} on a host with an NVIDIA GPU, or set compute.gpu: false"
        )


def describe() -> dict[str, str]:
    """``{'jax_backend': 'cpu' | 'gpu' | ..., 'jax_device': the kind of JAX's first device}``:
    ``cpu`` and ``cpu``, or ``gpu`` and the GPU's model name. Starts JAX's backend."""
    import jax

    return {"jax_backend": jax.default_backend(), "jax_device": jax.devices()[0].device_kind}


def set_jax_option(name: str, value: bool | int | float | str) -> None:
    """Set JAX's option ``name`` (``jax_enable_x64``, ...) to ``value`` without importing JAX:
    in its environment variable (``JAX_ENABLE_X64``, ...), which JAX reads when it is imported
    (in this process and in the jobs it starts), and, where JAX is already imported, in JAX's
    config."""
    os.environ[name.upper()] = str(value)
    if sys.modules.get("jax") is not None:
        sys.modules["jax"].config.update(name, value)
