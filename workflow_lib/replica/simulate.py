"""Ridge / minimum-norm simulations of the masked-site regression (Rende et al. 2024, eq. 6,
Fig. 3 left).

λ uses the θ-scaling (``saddle``): Â = (XᵀX + λpI)⁻¹Xᵀy, and λ = 0 is the Moore–Penrose solution
Â = X⁺y. The test error is exact, ε = E(y − Â·x)² = σ² + (Â − w*)ᵀΩ(Â − w*) (no factor ½).
"""

import numpy as np

from .gaussian import GaussianTask, sample_sequences


def ridge_fit(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Â = (XᵀX + λpI)⁻¹Xᵀy = Xᵀ(XXᵀ + λpI)⁻¹y: (..., p) from x: (..., M, p), y: (..., M).

    Solves with the smaller Gram matrix, so λ = 0 gives the Moore–Penrose solution X⁺y
    (least squares for M ≥ p, minimum-norm interpolator for M < p) whenever X has full rank,
    which holds almost surely for Gaussian data. Leading axes are independent problems.
    """
    M, p = x.shape[-2:]
    xt = np.swapaxes(x, -1, -2)
    if M >= p:
        return np.linalg.solve(xt @ x + lam * p * np.eye(p), (xt @ y[..., None]))[..., 0]
    return (xt @ np.linalg.solve(x @ xt + lam * p * np.eye(M), y[..., None]))[..., 0]


def population_error(task: GaussianTask, a_hat: np.ndarray) -> np.ndarray:
    """Exact test MSE σ² + (Â − w*)ᵀΩ(Â − w*) for a_hat: (..., p); returns shape (...)."""
    d = a_hat - task.w_star
    return task.sigma2 + np.einsum("...i,ij,...j->...", d, task.Omega, d)


def simulate_ridge(
    task: GaussianTask,
    alphas: np.ndarray,
    lam: float,
    n_realisations: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Test error of the fitted Â on fresh training sets of M = max(1, round(αL)) sequences,
    and its training error (the mean squared residual on its own training set).

    Returns alpha (n_alpha,), M (n_alpha,) int, errors (n_alpha, n_realisations), their
    mean and sem (standard error of the mean, ddof = 1), each (n_alpha,), and train_mean
    (n_alpha,), the mean training error. Note α = M/L here, while the theory's α is n/p: compare
    with the theory at M/p.
    """
    if n_realisations < 2:
        raise ValueError("need at least 2 realisations for a standard error")
    alphas = np.asarray(alphas, dtype=np.float64)
    sizes = np.maximum(1, np.rint(alphas * task.L).astype(int))
    a_hat, train = [], []
    for M in sizes:
        x, y = sample_sequences(rng, task, n_realisations * M)
        x, y = x.reshape(n_realisations, M, -1), y.reshape(-1, M)
        fit = ridge_fit(x, y, lam)
        a_hat.append(fit)
        train.append(np.mean((y - np.einsum("rmp,rp->rm", x, fit)) ** 2))
    errors = population_error(task, np.array(a_hat))
    return {
        "alpha": alphas,
        "M": sizes,
        "errors": errors,
        "mean": errors.mean(axis=1),
        "sem": errors.std(axis=1, ddof=1) / np.sqrt(n_realisations),
        "train_mean": np.array(train),
    }
