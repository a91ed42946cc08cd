"""Losses of masked-language-model training (Rende et al. 2024, eq. 3): the mini-batch MLM loss,
the loss over all sites of all sequences and the training objective with its l2 penalty."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from workflow_lib.mlm.metrics import sq_norm
from workflow_lib.mlm.models import ArchSpec, Params, cross_entropy, predict, predict_all_sites

Array = jax.Array


def mlm_loss(spec: ArchSpec, params: Params, seqs: Array, sites: Array | None) -> Array:
    """Mini-batch MLM loss of ``seqs: (B, L)``: all sites (factored family, ``sites=None``) or
    the masked site ``sites: (B,)`` of each sequence (transformers)."""
    if spec.kind != "transformer":
        return cross_entropy(predict_all_sites(spec, params, seqs)[0], seqs)
    logits, _ = predict(spec, params, seqs, sites)
    return cross_entropy(logits, seqs[jnp.arange(seqs.shape[0]), sites])


def full_loss(spec: ArchSpec, params: Params, seqs: Array) -> Array:
    """MLM loss averaged over all sites of all sequences ``seqs: (M, L)`` (the test loss)."""
    return cross_entropy(predict_all_sites(spec, params, seqs)[0], seqs)


def full_objective(spec: ArchSpec, params: Params, seqs: Array, l2: float) -> Array:
    """The training objective on all sites of ``seqs: (M, L)``: ``full_loss + l2 * sq_norm``."""
    return full_loss(spec, params, seqs) + l2 * sq_norm(params)
