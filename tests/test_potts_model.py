"""The generalised Potts model: couplings, energy, the exact conditional, enumeration."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workflow_lib.potts import model


@pytest.mark.slow
def test_couplings_shapes_and_symmetry():
    J = np.asarray(model.random_couplings(jax.random.key(0), 7))
    U = np.asarray(model.random_colour_couplings(jax.random.key(1), 5))
    assert J.shape == (7, 7) and U.shape == (5, 5)
    np.testing.assert_array_equal(J, J.T)
    np.testing.assert_array_equal(np.diag(J), 0)
    np.testing.assert_array_equal(U, U.T)
    assert np.all(np.diag(U) != 0)
    np.testing.assert_array_equal(model.random_colour_couplings(jax.random.key(1), 3, "identity"),
                                  np.eye(3))
    with pytest.raises(ValueError, match="allowed"):
        model.random_colour_couplings(jax.random.key(1), 3, "uniform")


def test_energy_matches_explicit_double_sum(tiny_model):
    J, U = tiny_model
    rng = np.random.default_rng(0)
    seqs = rng.integers(0, 3, size=(20, 4))
    explicit = [-sum(J[i, j] * U[s[i], s[j]] for i in range(4) for j in range(i + 1, 4))
                for s in seqs]
    np.testing.assert_allclose(model.energy(jnp.asarray(seqs), J, U), explicit, rtol=1e-12)


@pytest.mark.parametrize("beta", [0.3, 1.0, 2.5])
def test_conditional_equals_ratio_of_boltzmann_weights(tiny_model, beta):
    """P(s_i = a | rest) from eq. (5) equals w(s with s_i=a) / sum_b w(s with s_i=b)."""
    J, U = tiny_model
    L, C = 4, 3
    for s in itertools.product(range(C), repeat=L):
        s = np.array(s)
        logp = np.asarray(model.conditional_log_probs(jnp.asarray(s), J, U, beta))
        for i in range(L):
            variants = np.repeat(s[None], C, axis=0)
            variants[:, i] = np.arange(C)
            logw = -beta * np.asarray(model.energy(jnp.asarray(variants), J, U))
            np.testing.assert_allclose(logp[i], logw - np.logaddexp.reduce(logw), atol=1e-12)


def test_exact_marginals_are_normalised_and_consistent(tiny_model):
    J, U = tiny_model
    configs, probs, log_z = model.exact_distribution(J, U, 0.8)
    assert configs.shape == (81, 4) and np.isclose(probs.sum(), 1.0)
    p1, p2 = model.exact_marginals(J, U, 0.8)
    np.testing.assert_allclose(p1.sum(axis=1), 1.0)
    np.testing.assert_allclose(p2.sum(axis=3), p1[:, None, :].repeat(4, 1), atol=1e-12)
    # log Z by brute force
    w = [np.exp(-0.8 * float(model.energy(jnp.asarray(c), J, U))) for c in configs]
    assert np.isclose(log_z, np.log(np.sum(w)))


def test_optimal_loss_is_mean_conditional_nll(tiny_model):
    J, U = tiny_model
    seqs = np.random.default_rng(1).integers(0, 3, size=(50, 4))
    logp = np.asarray(model.conditional_log_probs(jnp.asarray(seqs), J, U, 1.3))
    expected = -np.mean([logp[m, i, seqs[m, i]] for m in range(50) for i in range(4)])
    assert np.isclose(float(model.optimal_loss(jnp.asarray(seqs), J, U, 1.3)), expected)


def test_mean_pairwise_hamming_matches_brute_force():
    seqs = np.random.default_rng(2).integers(0, 4, size=(30, 7))
    brute = np.mean([np.mean(a != b) for a, b in itertools.combinations(seqs, 2)])
    assert np.isclose(model.mean_pairwise_hamming(seqs), brute)
