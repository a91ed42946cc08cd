"""How a job's JAX runs: threads, backend, compile flags and the persistent compilation cache,
set before JAX starts its backend (``configure_jax``; every stage job and the Omniglot command),
without importing JAX (``backend.set_jax_option``): a job imports JAX only if it computes with
it."""

from __future__ import annotations

import os

from workflow_lib.core.backend import require, select, set_jax_option

JOB_XLA_FLAGS = "--xla_cpu_use_fusion_emitters=false"
SINGLE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def configure_jax(threads: int, device: str, what: str) -> None:
    """Pin BLAS and XLA to ``threads``; on CPU, one XLA device per thread (chains shard over
    them); let JAX use only ``device``'s backend (``workflow_lib.core.backend.select``: a CPU job
    never takes a GPU, a GPU job allocates GPU memory on demand) and stop a GPU job (``what``:
    ``rule NAME``) that finds no GPU (``require``); keep compiled programs in the persistent
    cache (``use_compilation_cache``: compilation dominates short jobs); compile with XLA:CPU's
    fusion emitters off (``JOB_XLA_FLAGS``: less CPU for the many short programs; the Gibbs
    kernels turn them back on for themselves). Must run before JAX starts its backend."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    flags = JOB_XLA_FLAGS + (f" {SINGLE_THREAD_XLA_FLAGS}" if threads == 1 else "")
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()
    select(device)
    set_jax_option("jax_num_cpu_devices", threads)
    use_compilation_cache()
    require(device, what)


def use_compilation_cache() -> None:
    """Keep every compiled program, the many small ones too, in the persistent cache that jobs
    (``configure_jax``) and the test suite share: ``JAX_CACHE_DIR``, default
    ``~/.cache/workflow_lib/jax``. A program is found there by its own text, the compiler's
    options and JAX's version; a program found changes no number."""
    cache = os.environ.get("JAX_CACHE_DIR", os.path.expanduser("~/.cache/workflow_lib/jax"))
    set_jax_option("jax_compilation_cache_dir", cache)
    set_jax_option("jax_persistent_cache_min_compile_time_secs", 0.0)

