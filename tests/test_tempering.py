"""Parallel tempering against exact enumeration (L=4, C=3) and its bookkeeping."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.test_gibbs import max_z_batch_means
from workflow_lib.potts import gibbs, model, tempering


@pytest.mark.slow
def test_sweep_chains_is_the_per_chain_kernel(tiny_model):
    """``sweep_chains`` with per-chain beta J equals single_chain's kernel chain by chain."""
    J, U = tiny_model
    B = 6
    betas = jnp.linspace(0.2, 1.5, B)
    state = jax.random.randint(jax.random.key(0), (4, B), 0, 3, jnp.int32)
    u = jax.random.uniform(jax.random.key(1), (4, B))
    bJ = (betas[None, None, :] * jnp.asarray(J, jnp.float32)[:, :, None]).astype(jnp.float32)
    out = gibbs.sweep_chains(state, u, bJ, jnp.asarray(U, jnp.float32))
    for b in range(B):  # site by site from the exact conditional's logits
        s = np.asarray(state[:, b]).copy()
        for i in range(4):
            logits = model.local_fields(jnp.asarray(s), J, U, float(betas[b]))[i]
            draw = gibbs.inverse_cdf_draw(logits[None].astype(jnp.float32), u[i, b : b + 1])
            s[i] = int(draw[0])
        np.testing.assert_array_equal(np.asarray(out[:, b]), s)


def test_ladder_is_geometric_from_the_target():
    b = np.asarray(tempering.ladder(jnp.array([2.0, 1.0]), 5, 0.25))
    np.testing.assert_allclose(b[0], 2.0 * 0.25 ** (np.arange(5) / 4), rtol=1e-6)
    np.testing.assert_allclose(b[:, 0], [2.0, 1.0])
    np.testing.assert_allclose(b[:, 1:] / b[:, :-1], 0.25 ** 0.25, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_parallel_tempering_matches_exact_marginals(tiny_model, beta):
    J, U = tiny_model
    K = 48
    run = tempering.parallel_tempering(
        jax.random.split(jax.random.key(6), K), jnp.asarray(J), jnp.asarray(U),
        jnp.full(K, beta), n_replicas=4, ladder_min=0.3, n_save=1000, burn_in=50,
        sweeps_between=3, blocks=2,
    )
    assert run.saved.shape == (K, 1000, 4) and run.burn_in_energy.shape == (K, 50)
    assert max_z_batch_means(run.saved, J, U, beta) < 5.0
    assert run.swap_acceptance.shape == (K, 3)
    assert np.all((run.swap_acceptance > 0) & (run.swap_acceptance <= 1))
    assert np.all(run.round_trips > 0)


@pytest.mark.slow
def test_parallel_tempering_check_has_power(tiny_model):
    """Rung-0 samples at beta = 1.0 fail the check against the exact marginals at beta = 1.3."""
    J, U = tiny_model
    K = 48
    run = tempering.parallel_tempering(
        jax.random.split(jax.random.key(6), K), jnp.asarray(J), jnp.asarray(U),
        jnp.full(K, 1.0), n_replicas=4, ladder_min=0.3, n_save=400, burn_in=50,
        sweeps_between=3,
    )
    assert max_z_batch_means(run.saved, J, U, 1.3) > 5.0


@pytest.mark.slow
def test_parallel_tempering_is_block_and_batch_invariant(tiny_model):
    J, U = tiny_model
    keys = jax.random.split(jax.random.key(5), 2)
    kw = dict(n_replicas=3, ladder_min=0.5, n_save=20, burn_in=10, sweeps_between=4)
    args = (jnp.asarray(J), jnp.asarray(U))
    a = tempering.parallel_tempering(keys, *args, jnp.array([0.7, 1.1]), **kw, blocks=1)
    b = tempering.parallel_tempering(keys, *args, jnp.array([0.7, 1.1]), **kw, blocks=3)
    c = tempering.parallel_tempering(keys[1:], *args, jnp.array([1.1]), **kw)
    np.testing.assert_array_equal(a.saved, b.saved)
    np.testing.assert_array_equal(a.saved[1], c.saved[0])
    np.testing.assert_array_equal(a.round_trips, b.round_trips)
