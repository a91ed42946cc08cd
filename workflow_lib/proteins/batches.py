"""Sequences cut into equal batches for compiled programs of one shape."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def padded_chunks(seqs: np.ndarray, weights: np.ndarray,
                  chunk: int) -> tuple[jax.Array, jax.Array]:  # fmt: skip
    """``seqs: (M, L)`` and ``weights: (M,)`` as ``(C, size, L)`` and ``(C, size)``,
    ``size = min(chunk, M)``, the last chunk padded with copies of the first sequence at weight
    0."""
    size = min(chunk, len(seqs))
    pad = -len(seqs) % size
    x = np.concatenate([seqs, np.repeat(seqs[:1], pad, axis=0)])
    w = np.concatenate([weights, np.zeros(pad)])
    return (jnp.asarray(x.reshape(-1, size, seqs.shape[1]), jnp.int32),
            jnp.asarray(w.reshape(-1, size), jnp.float32))
