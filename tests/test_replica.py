"""Gaussian model, replica theory and ridge simulations of Rende et al. 2024, Fig. 3 left."""

import numpy as np
import pytest

from workflow_lib.replica.gaussian import gaussian_task, goe_couplings, sample_sequences
from workflow_lib.replica.saddle import (
    generalisation_curve,
    kappa_error,
    solve_kappa,
    solve_saddle_point,
)
from workflow_lib.replica.simulate import population_error, ridge_fit, simulate_ridge

DELTA = 3.0


@pytest.fixture(scope="module")
def task():
    return gaussian_task(goe_couplings(np.random.default_rng(0), 100), DELTA)


@pytest.fixture(scope="module")
def task200():
    """The instance behind the §6.5 table: L = 200, Δ = 3, J from default_rng(0)."""
    return gaussian_task(goe_couplings(np.random.default_rng(0), 200), DELTA)


# --- Gaussian model (§6.1) -----------------------------------------------------------------


def test_goe_normalisation():
    L = 400
    J = goe_couplings(np.random.default_rng(1), L)
    np.testing.assert_array_equal(J, J.T)
    off = J[np.triu_indices(L, 1)]
    assert off.var() * L == pytest.approx(1.0, rel=0.02)
    assert abs(np.linalg.eigvalsh(J)[-1] - 2) < 0.1


@pytest.mark.parametrize("site", [0, 7])
def test_teacher_and_noise_identities(site):
    task = gaussian_task(goe_couplings(np.random.default_rng(2), 30), DELTA, site=site)
    rest = np.delete(np.arange(30), site)
    precision = np.linalg.inv(task.Sigma)
    np.testing.assert_allclose(task.Omega, task.Sigma[np.ix_(rest, rest)])
    np.testing.assert_allclose(
        task.w_star, -precision[site, rest] / precision[site, site], rtol=1e-10, atol=1e-14
    )
    np.testing.assert_allclose(
        task.w_star, np.linalg.solve(task.Omega, task.Sigma[rest, site]), rtol=1e-10, atol=1e-14
    )
    assert task.sigma2 == pytest.approx(1 / precision[site, site], rel=1e-12)
    assert task.sigma2 + task.rho == pytest.approx(task.Sigma[site, site], rel=1e-12)


def test_large_L_constants(task200):
    g = (DELTA - np.sqrt(DELTA**2 - 4)) / 2
    assert task200.Sigma[0, 0] == pytest.approx(g, abs=0.02)
    assert task200.sigma2 == pytest.approx(1 / DELTA, abs=0.02)


@pytest.mark.parametrize("delta", [2.0, 1.5, -1.0])
def test_delta_at_most_two_raises(delta):
    J = goe_couplings(np.random.default_rng(3), 20)
    with pytest.raises(ValueError, match="must exceed 2"):
        gaussian_task(J, delta)


def test_invalid_couplings_raise():
    J = np.zeros((5, 5))
    J[0, 0] = 2.6
    with pytest.raises(ValueError, match="top eigenvalue"):
        gaussian_task(J, 2.5)
    J[0, 1] = 0.1
    with pytest.raises(ValueError, match="symmetric"):
        gaussian_task(J, 3.0)


def test_sampling_moments():
    task = gaussian_task(goe_couplings(np.random.default_rng(4), 8), DELTA, site=3)
    x, y = sample_sequences(np.random.default_rng(5), task, 200_000)
    assert x.shape == (200_000, 7) and y.shape == (200_000,)
    np.testing.assert_allclose(np.cov(x.T), task.Omega, atol=0.01)
    noise = y - x @ task.w_star
    assert noise.var() == pytest.approx(task.sigma2, rel=0.02)
    np.testing.assert_allclose(x.T @ noise / len(y), 0, atol=0.01)


# --- Replica theory (§6.3-6.4) ---------------------------------------------------------------


@pytest.mark.parametrize("lam", [0.0, 1e-4, 1e-2, 1e-1, 1.0])
@pytest.mark.parametrize("alpha", [0.05, 0.3, 0.8, 0.95, 1.05, 1.2, 3.0])
def test_saddle_point_matches_kappa_formula(task, alpha, lam):
    sp = solve_saddle_point(task, alpha, lam)
    assert sp.eps_g == pytest.approx(kappa_error(task, alpha, lam), rel=1e-8)
    assert sp.kappa == pytest.approx(solve_kappa(task, alpha, lam), rel=1e-8, abs=1e-300)
    assert sp.eps_g == pytest.approx(task.sigma2 + task.rho - 2 * sp.m + sp.q, rel=1e-12)


@pytest.mark.parametrize("alpha", [1.1, 1.5, 2.0, 4.0, 10.0])
def test_ridgeless_overparametrised_closed_form(task, alpha):
    exact = task.sigma2 * alpha / (alpha - 1)
    assert kappa_error(task, alpha, 0.0) == pytest.approx(exact, rel=1e-8)
    sp = solve_saddle_point(task, alpha, 0.0)
    assert sp.eps_g == pytest.approx(exact, rel=1e-8)
    assert sp.V == pytest.approx(1 / (alpha - 1), rel=1e-8)


def test_ridgeless_interpolating_branch(task):
    sp = solve_saddle_point(task, 0.5, 0.0)
    assert sp.V == np.inf and sp.V_hat == 0.0
    # the λ → 0⁺ limit is continuous: compare with a tiny positive ridge
    assert sp.eps_g == pytest.approx(solve_saddle_point(task, 0.5, 1e-9).eps_g, rel=1e-6)
    assert kappa_error(task, 1.0, 0.0) == np.inf
    with pytest.raises(ValueError, match="diverges"):
        solve_saddle_point(task, 1.0, 0.0)


@pytest.mark.parametrize("lam", [0.0, 1e-2])
def test_small_alpha_limit_is_sigma_ii(task, lam):
    sigma_ii = task.Sigma[0, 0]
    assert task.sigma2 + task.rho == pytest.approx(sigma_ii, rel=1e-12)
    for method in ("kappa", "saddle"):
        eps = generalisation_curve(task, np.array([1e-6]), lam, method=method)[0]
        assert eps == pytest.approx(sigma_ii, rel=1e-5)


def test_peak_and_large_alpha_decay(task):
    alphas = np.array([0.5, 0.9, 0.99, 1.01, 1.1, 2.0, 100.0])
    eps = generalisation_curve(task, alphas, 0.0)
    assert eps[2] > eps[1] > eps[0] > task.Sigma[0, 0]
    assert eps[3] > eps[4] > eps[5] > eps[6] > task.sigma2
    assert (eps[6] - task.sigma2) * 99 == pytest.approx(task.sigma2, rel=1e-8)


def test_non_convergence_raises(task):
    with pytest.raises(RuntimeError, match="did not converge"):
        solve_saddle_point(task, 0.8, 1e-3, max_iter=5)


def test_curve_methods_and_shape(task):
    alphas = np.array([[0.2, 0.7], [1.3, 2.5]])
    eps = generalisation_curve(task, alphas, 1e-2)
    assert eps.shape == alphas.shape
    np.testing.assert_allclose(
        eps, generalisation_curve(task, alphas, 1e-2, method="saddle"), rtol=1e-8
    )
    with pytest.raises(ValueError):
        generalisation_curve(task, alphas, 1e-2, method="nope")


# §6.5 table (theory columns), same instance. Depends on the numpy PCG64 normal stream.
TABLE_ALPHAS = [0.2, 0.5, 0.8, 1.2, 2.0, 5.0]
TABLE = {
    1e-4: [0.459, 0.708, 1.692, 1.979, 0.669, 0.418],
    1e-2: [0.452, 0.645, 0.994, 1.072, 0.634, 0.417],
    1e-1: [0.415, 0.472, 0.514, 0.531, 0.497, 0.405],
}


@pytest.mark.parametrize("lam", list(TABLE))
def test_reproduces_the_reference_table(task200, lam):
    eps = generalisation_curve(task200, np.array(TABLE_ALPHAS), lam)
    np.testing.assert_allclose(eps, TABLE[lam], atol=1e-3)


# --- Simulations (§6.6) ---------------------------------------------------------------------


@pytest.mark.parametrize("M", [20, 80])
def test_ridge_fit_limits(M):
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((M, 50)), rng.standard_normal(M)
    a0 = ridge_fit(x, y, 0.0)
    np.testing.assert_allclose(a0, np.linalg.pinv(x) @ y, atol=1e-10)
    np.testing.assert_allclose(ridge_fit(x, y, 1e-8), a0, atol=1e-5)
    lam = 0.3
    direct = np.linalg.inv(x.T @ x + lam * 50 * np.eye(50)) @ x.T @ y
    np.testing.assert_allclose(ridge_fit(x, y, lam), direct, rtol=1e-10)


def test_population_error_is_mse_without_half():
    task = gaussian_task(goe_couplings(np.random.default_rng(7), 10), DELTA)
    a_hat = task.w_star + 0.3 * np.random.default_rng(8).standard_normal(task.p)
    x, y = sample_sequences(np.random.default_rng(9), task, 400_000)
    sq = (y - x @ a_hat) ** 2
    assert abs(sq.mean() - population_error(task, a_hat)) < 3 * sq.std() / np.sqrt(len(sq))


@pytest.mark.parametrize(
    ("L", "lam", "alphas"),
    [
        (100, 1e-2, [0.2, 0.5, 0.8, 1.25, 2.0, 4.0]),
        (200, 0.0, [0.3, 0.6, 0.8, 1.25, 1.6, 3.0]),
    ],
)
def test_theory_matches_simulation(L, lam, alphas):
    """|sim mean − theory| ≤ 2 s.e. at every α; theory evaluated at the simulated n/p = M/p.

    Under a correct theory each point fails with probability ≈ 5%, so the seed is fixed.
    """
    task = gaussian_task(goe_couplings(np.random.default_rng(0), L), DELTA)
    sim = simulate_ridge(task, np.array(alphas), lam, 30, np.random.default_rng(1))
    assert sim["errors"].shape == (len(alphas), 30)
    np.testing.assert_array_equal(sim["M"], np.rint(np.array(alphas) * L).astype(int))
    theory = generalisation_curve(task, sim["M"] / task.p, lam)
    assert np.all(np.abs(sim["mean"] - theory) <= 2 * sim["sem"])


def test_training_error_vanishes_below_the_threshold_and_is_least_squares_beyond(task):
    """At lambda = 0 the minimum-norm fit goes through every training point for M < p; for
    M > p the mean least-squares residual is sigma2 (1 - p / M) (its expectation)."""
    L = task.L
    sim = simulate_ridge(task, np.array([0.5, 4.0]), 0.0, 200, np.random.default_rng(2))
    M = sim["M"]
    assert M[0] < task.p < M[1]
    assert sim["train_mean"][0] < 1e-12 * task.sigma2
    expected = task.sigma2 * (1 - task.p / M[1])
    assert sim["train_mean"][1] == pytest.approx(expected, rel=0.05)
    assert L == task.p + 1
