"""Mini-batches of masked-language-model training: one epoch's sequences, drawn without
replacement, and for transformers the masked site of each."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from workflow_lib.mlm.models import ArchSpec
from workflow_lib.mlm.plan import Plan

Array = jax.Array


def shuffle(key: Array, n: int) -> Array:
    """Random order of ``range(n)`` (int32) by sorting one 32-bit random key per element: one
    round of ``jax.random.permutation``, which runs two above ~1600 elements (twice the compile
    cost) to break ties; a tie (about ``n^2 / 2^33`` per draw) keeps its two elements in order."""
    return lax.sort_key_val(jax.random.bits(key, (n,)), jnp.arange(n, dtype=jnp.int32))[1]


def epoch_batches(spec: ArchSpec, plan: Plan, key: Array, n: int) -> tuple[Array, Array | None]:
    """One epoch's mini-batches of ``n`` sequences: indices ``(steps, batch)`` drawn without
    replacement and, for transformers, the masked site of each sequence (else ``None``): drawn
    at random, or with ``plan.all_sites`` every (sequence, site) pair once."""
    transformer = spec.kind == "transformer"
    if transformer and plan.all_sites:
        pairs = shuffle(key, n * spec.L)[: plan.steps * plan.batch].reshape(plan.steps, plan.batch)
        return pairs // spec.L, pairs % spec.L
    k_order, k_sites = jax.random.split(key) if transformer else (key, key)
    idx = shuffle(k_order, n)[: plan.steps * plan.batch].reshape(plan.steps, plan.batch)
    return idx, jax.random.randint(k_sites, idx.shape, 0, spec.L) if transformer else None
