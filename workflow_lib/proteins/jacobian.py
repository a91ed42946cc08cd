"""Categorical-Jacobian contact scores of a masked language model.

The categorical Jacobian of a model whose masked-token logits at site i are ``f_i(X): (Q,)`` for
one-hot inputs ``X: (L, Q)`` is ``J[i, j, a, b] = d f_i(X)[a] / d X[j, b]``, shape
``(L, L, Q, Q)``: how the prediction of state a at the masked site i moves with the input
state b at site j. It plays the role of couplings: for a Potts-like model whose logits are
``h_i + sum_j J_ij[:, s_j]`` it is those couplings exactly. Its contact scores are those of
couplings (``contacts.contact_scores``): symmetrised, zero-sum gauge, Frobenius norm over the 20
amino acids, APC (the Jacobian scores of protein language models, Zhang et al. 2024, PNAS 121,
e2406285121, computed by differentiation of the masked-token logits rather than by substitution).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from workflow_lib.mlm.models import ArchSpec, Params, transformer_predict_onehot
from workflow_lib.proteins import contacts
from workflow_lib.proteins.batches import padded_chunks

Array = jax.Array


def categorical_jacobian(site_logits: Callable[[Array, Array], Array], onehot: Array) -> Array:
    """``J[i, j, a, b] = d site_logits(onehot, i)[a] / d onehot[j, b]``, shape ``(L, L, Q, Q)``.

    ``site_logits(onehot: (L, Q), i) -> (Q,)``: the logits at site i with i masked. One reverse
    pass per output state and site (``L * Q`` in all), sites in sequence (bounded memory).
    """
    onehot = jnp.asarray(onehot)

    def one_site(i: Array) -> Array:
        return jax.jacrev(site_logits)(onehot, i)  # (Q, L, Q): [a, j, b]

    return jnp.transpose(lax.map(one_site, jnp.arange(onehot.shape[0])), (0, 2, 1, 3))


@functools.partial(jax.jit, static_argnums=0)
def _weighted_jacobian(spec: ArchSpec, params: Params, block: Array, w: Array) -> Array:
    """``sum_b w[b] J(block[b])`` over a block ``(B, L)`` of integer sequences, ``w: (B,)``
    (0 for a padding row); the parameters are arguments, so that one program serves every
    block, fit and job of a shape."""
    dtype = params["embed"]["w"].dtype

    def site_logits(onehot: Array, i: Array) -> Array:
        logits, _ = transformer_predict_onehot(spec, params, onehot[None], i[None])
        return logits[0]

    onehot = jax.nn.one_hot(block, spec.C, dtype=dtype)
    jac = jax.vmap(lambda x: categorical_jacobian(site_logits, x))(onehot)
    return jnp.einsum("b,b...->...", w.astype(dtype), jac)


def transformer_jacobian(spec: ArchSpec, params: Params, seqs: np.ndarray,
                         chunk: int = 8) -> np.ndarray:  # fmt: skip
    """The categorical Jacobian of a transformer's masked-token logits, averaged over the
    sequences ``seqs: (N, L)`` (integer states), ``chunk`` sequences at a time (the last block
    padded with weight 0); shape ``(L, L, Q, Q)``, float64."""
    blocks, w = padded_chunks(np.asarray(seqs), np.ones(len(seqs)), chunk)
    total = 0.0
    for block, wb in zip(blocks, w, strict=True):
        total = total + np.asarray(_weighted_jacobian(spec, params, block, wb), np.float64)
    return total / len(seqs)


def jacobian_scores(jacobian: np.ndarray) -> np.ndarray:
    """Contact scores ``(L, L)`` of a categorical Jacobian ``(L, L, Q, Q)``: symmetrised,
    zero-sum gauge, Frobenius norm over the 20 amino acids, APC (``contacts.contact_scores``)."""
    return contacts.contact_scores(jacobian)
