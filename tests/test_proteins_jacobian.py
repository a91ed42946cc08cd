"""Categorical-Jacobian contact scores: the Jacobian of hand-made logits, of a Potts model (its
couplings) and of a transformer (against finite differences), and its scores."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workflow_lib.mlm.models import arch_spec, init, transformer_predict_onehot
from workflow_lib.proteins import contacts
from workflow_lib.proteins.alignment import Q
from workflow_lib.proteins.jacobian import (
    categorical_jacobian,
    jacobian_scores,
    transformer_jacobian,
)
from workflow_lib.proteins.transformer import evaluate_transformer

L = 9


def _onehot(seed: int) -> jnp.ndarray:
    states = np.random.default_rng(seed).integers(0, Q, L)
    return jax.nn.one_hot(states, Q, dtype=jnp.float64)


def test_logits_that_read_one_site_score_that_pair_alone():
    """A model whose logits at i = 2 depend only on the input at j = 6 (and at no other site on
    anything): the Jacobian's Frobenius score is non-zero at (2, 6) and (6, 2) and nowhere else."""
    W = jax.random.normal(jax.random.key(0), (Q, Q), jnp.float64)

    def site_logits(onehot, i):
        return jnp.where(i == 2, jnp.tanh(W @ onehot[6]), jnp.zeros(Q))

    J = np.asarray(categorical_jacobian(site_logits, _onehot(1)))
    assert J.shape == (L, L, Q, Q)
    F = contacts.frobenius_scores(J)
    nonzero = {(int(a), int(b)) for a, b in zip(*np.nonzero(F > 1e-12), strict=True)}
    assert nonzero == {(2, 6), (6, 2)}
    assert np.all(jacobian_scores(J) == contacts.apc(F))


def test_the_jacobian_of_a_potts_model_is_its_couplings():
    """Logits h_i + sum_{j != i} J_ij[:, s_j]: the categorical Jacobian is J (diagonal blocks
    zero), at any input sequence."""
    k1, k2 = jax.random.split(jax.random.key(3))
    couplings = jax.random.normal(k1, (L, L, Q, Q), jnp.float64)
    couplings = couplings * (1 - jnp.eye(L))[:, :, None, None]
    fields = jax.random.normal(k2, (L, Q), jnp.float64)

    def site_logits(onehot, i):
        return fields[i] + jnp.einsum("jab,jb->a", couplings[i], onehot)

    for seed in (0, 1):
        np.testing.assert_allclose(categorical_jacobian(site_logits, _onehot(seed)), couplings,
                                   atol=1e-12)


@pytest.mark.parametrize("arch", ["vanilla1", "vanilla3"])
def test_a_transformers_jacobian_matches_finite_differences(arch):
    spec = arch_spec(arch, L, Q, model_dim=8, mask_token="channel")
    params = init(spec, jax.random.key(4), jnp.float64)
    seq = np.random.default_rng(2).integers(0, Q, L)
    J = transformer_jacobian(spec, params, seq[None])
    assert J.shape == (L, L, Q, Q)
    np.testing.assert_array_equal(J[np.arange(L), np.arange(L)], 0.0)  # masked: no own input
    onehot = jax.nn.one_hot(seq, Q, dtype=jnp.float64)
    eps = 1e-5
    for i, j, a, b in ((0, 5, 3, 7), (4, 1, 0, int(seq[1])), (8, 2, 20, 11)):
        step = jnp.zeros((L, Q), jnp.float64).at[j, b].set(eps)
        up, _ = transformer_predict_onehot(spec, params, (onehot + step)[None], jnp.array([i]))
        down, _ = transformer_predict_onehot(spec, params, (onehot - step)[None], jnp.array([i]))
        assert J[i, j, a, b] == pytest.approx(float(up[0, a] - down[0, a]) / (2 * eps),
                                              rel=1e-5, abs=1e-9)
    assert np.abs(J).max() > 1e-3  # the test could fail: the model does read its inputs
    # the average over sequences is the mean of each sequence's Jacobian
    other = np.random.default_rng(3).integers(0, Q, L)
    both = transformer_jacobian(spec, params, np.stack([seq, other]))
    np.testing.assert_allclose(both, (J + transformer_jacobian(spec, params, other[None])) / 2,
                               atol=1e-12)


def test_chunked_and_padded_evaluations_equal_one_block():
    """Seven sequences in chunks of 3 (the last padded with weight 0) give the losses, map and
    Jacobian of one block of all seven."""
    spec = arch_spec("vanilla1", L, Q, model_dim=8, mask_token="channel")
    params = init(spec, jax.random.key(5), jnp.float64)
    seqs = np.random.default_rng(4).integers(0, Q, (7, L))
    losses, att = evaluate_transformer(spec, params, seqs, chunk=3)
    whole_losses, whole_att = evaluate_transformer(spec, params, seqs, chunk=7)
    assert losses.shape == (7,) and att.shape == (L, L)
    np.testing.assert_allclose(losses, whole_losses, rtol=1e-12)
    np.testing.assert_allclose(att, whole_att, rtol=1e-12)
    one, _ = evaluate_transformer(spec, params, seqs[4:5])
    assert losses[4] == pytest.approx(one[0], rel=1e-12)  # a row's loss is its own
    np.testing.assert_allclose(transformer_jacobian(spec, params, seqs, chunk=3),
                               transformer_jacobian(spec, params, seqs, chunk=7), atol=1e-12)
