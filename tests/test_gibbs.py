"""The Gibbs sampler against exact enumeration (L=4, C=3), for both protocols."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workflow_lib.potts import gibbs, model


def onehot_stats(seqs: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Empirical one- and two-site marginals of ``seqs: (..., n, L)`` over the ``n`` axis."""
    x = np.eye(C)[seqs]  # (..., n, L, C)
    p1 = x.mean(axis=-3)
    p2 = np.einsum("...nia,...njb->...ijab", x, x) / seqs.shape[-2]
    return p1, p2


def max_z_independent(seqs: np.ndarray, J, U, beta: float) -> float:
    """Largest |z| of the one- and two-site marginals of independent draws ``seqs: (n, L)``."""
    n, C = seqs.shape[0], U.shape[0]
    q1, q2 = model.exact_marginals(J, U, beta)
    p1, p2 = onehot_stats(seqs, C)
    iu = np.triu_indices(seqs.shape[1], k=1)
    est = np.concatenate([p1.ravel(), p2[iu].ravel()])
    exact = np.concatenate([q1.ravel(), q2[iu].ravel()])
    ok = np.minimum(exact, 1 - exact) * n >= 10  # where the normal approximation holds
    return float(np.max(np.abs(est - exact)[ok] / np.sqrt(exact * (1 - exact) / n)[ok]))


def max_z_batch_means(seqs: np.ndarray, J, U, beta: float) -> float:
    """Largest |z| of the marginals, with errors from the spread over independent chains.

    ``seqs: (R, n, L)``: R independent chains of n (correlated) saved configurations each.
    """
    R, C = seqs.shape[0], U.shape[0]
    q1, q2 = model.exact_marginals(J, U, beta)
    p1, p2 = onehot_stats(seqs, C)
    iu = np.triu_indices(seqs.shape[2], k=1)
    est = np.concatenate([p1.reshape(R, -1), p2[:, iu[0], iu[1]].reshape(R, -1)], axis=1)
    exact = np.concatenate([q1.ravel(), q2[iu].ravel()])
    se = est.std(axis=0, ddof=1) / np.sqrt(R)
    return float(np.max(np.abs(est.mean(axis=0) - exact) / np.maximum(se, 1e-12)))


@pytest.mark.parametrize("beta", [0.4, 0.8, 1.0])
def test_independent_chains_match_exact_marginals(tiny_model, beta):
    J, U = tiny_model
    final, trace = gibbs.independent_chains(
        jax.random.key(3), jnp.asarray(J), jnp.asarray(U), beta, n_chains=20_000, n_sweeps=500
    )
    assert final.shape == (20_000, 4) and trace.shape == (500, 8)
    assert max_z_independent(final, J, U, beta) < 5.0


def test_exactness_check_has_power(tiny_model):
    """Samples at beta = 0.7 fail the check against the exact marginals at beta = 0.8."""
    J, U = tiny_model
    final, _ = gibbs.independent_chains(
        jax.random.key(3), jnp.asarray(J), jnp.asarray(U), 0.7, n_chains=20_000, n_sweeps=500
    )
    assert max_z_independent(final, J, U, 0.8) > 5.0


@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_single_chain_matches_exact_marginals(tiny_model, beta):
    J, U = tiny_model
    R = 48
    saved, burn = gibbs.single_chain(
        jax.random.split(jax.random.key(4), R), jnp.broadcast_to(J, (R, 4, 4)),
        jnp.broadcast_to(U, (R, 3, 3)), jnp.full(R, beta), n_save=400, burn_in=50,
        sweeps_between=3, blocks=2,
    )
    assert saved.shape == (R, 400, 4) and burn.shape == (R, 50)
    assert max_z_batch_means(saved, J, U, beta) < 5.0


def test_single_chain_is_block_and_batch_invariant(tiny_model):
    """Splitting the run into blocks or batching realisations does not change a chain."""
    J, U = tiny_model
    keys = jax.random.split(jax.random.key(5), 2)
    args = (keys, jnp.stack([J, 2 * J]), jnp.stack([U, U]), jnp.array([0.7, 0.7]))
    kw = dict(n_save=30, burn_in=10, sweeps_between=4)
    a, _ = gibbs.single_chain(*args, **kw, blocks=1)
    b, _ = gibbs.single_chain(*args, **kw, blocks=4)
    c, _ = gibbs.single_chain(keys[1:], args[1][1:], args[2][1:], args[3][1:], **kw)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[1], c[0])


def test_inverse_cdf_draw_frequencies():
    logits = jnp.array([0.0, 1.0, -1.0, 2.0])
    u = jax.random.uniform(jax.random.key(0), (200_000,))
    draws = np.asarray(gibbs.inverse_cdf_draw(jnp.broadcast_to(logits[:, None], (4, 200_000)), u))
    p = np.asarray(jax.nn.softmax(logits))
    freq = np.bincount(draws, minlength=4) / draws.size
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / draws.size))
