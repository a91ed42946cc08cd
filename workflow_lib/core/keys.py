"""Random keys: one ``jax.random`` key per (stage, realisation), derived from the config seed."""

from __future__ import annotations

import zlib

import jax


def stage_key(seed: int, stage: str, realisation: int) -> jax.Array:
    """``fold_in(fold_in(key(seed), crc32(stage)), realisation)``: stable across runs and
    machines, independent between stages."""
    key = jax.random.fold_in(jax.random.key(seed), zlib.crc32(stage.encode()) & 0x7FFFFFFF)
    return jax.random.fold_in(key, realisation)
