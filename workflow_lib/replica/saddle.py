"""Replica theory of ridge regression on the Gaussian task (Rende et al. 2024, eqs. 7-8, App. B).

Conventions:
- α = n/p, samples per feature of the proportional limit (p = L − 1). The paper's α is M/L; for
  a sharp finite-size comparison with a simulation on M samples, evaluate the theory at M/p.
- λ in θ-scaling (prediction θ·x/√p, penalty (λ/2)‖θ‖²): A-space ridge penalty λp,
  Â = (XᵀX + λpI)⁻¹Xᵀy. λ = 0 means the Moore–Penrose (minimum-norm) limit λ → 0⁺, finite for
  every α ≠ 1.
- ε_g = E(y − Â·x)² = σ² + ρ − 2m + q, with no factor ½; m = w*ᵀΩÂ, q = ÂᵀΩÂ.
- Spectral data of the actual instance: Ω = Σ_k ω_k u_k u_kᵀ, t_k = (u_k·w*)² (the teacher is
  correlated with Ω through J, so it is not isotropic).
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import brentq

from .gaussian import GaussianTask


@dataclass(frozen=True)
class SaddlePoint:
    """Order parameters of the replica saddle point at (alpha, lam).

    V is the zero-temperature β(Q − q); hats are the conjugates. kappa = λ/V̂ is the effective
    ridge of the deterministic equivalent. In the ridgeless interpolating phase (λ = 0, α < 1)
    V = ∞ and V̂ = m̂ = q̂ = 0 while m, q, kappa and eps_g stay finite.
    """

    alpha: float
    lam: float
    m: float
    q: float
    V: float
    m_hat: float
    q_hat: float
    V_hat: float
    kappa: float
    eps_g: float
    n_iter: int


def _check_args(alpha: float, lam: float) -> None:
    if not alpha > 0:
        raise ValueError(f"α = {alpha} must be positive")
    if not lam >= 0:
        raise ValueError(f"λ = {lam} must be non-negative")


def _saddle_map(
    state: np.ndarray, task: GaussianTask, alpha: float, lam: float, offset: float
) -> np.ndarray:
    """One sweep (V, m, q) → (V, m, q) of the saddle-point equations, with 1 + V written
    offset + V."""
    V, m, q = state
    omega, t = task.spectrum
    v_hat = m_hat = alpha / (offset + V)
    q_hat = alpha * (task.sigma2 + task.rho - 2 * m + q) / (offset + V) ** 2
    den = lam + v_hat * omega
    return np.array(
        [
            np.mean(omega / den),
            m_hat * np.sum(omega**2 * t / den),
            q_hat * np.mean(omega**2 / den**2) + m_hat**2 * np.sum(omega**3 * t / den**2),
        ]
    )


def solve_saddle_point(
    task: GaussianTask,
    alpha: float,
    lam: float,
    *,
    damping: float = 0.5,
    tol: float = 1e-12,
    max_iter: int = 200_000,
) -> SaddlePoint:
    """Solve the saddle point by damped fixed-point iteration from V = 1, m = q = 0.

    Each sweep sets (V, m, q) ← damping·old + (1 − damping)·new. Stops when every component of
    the undamped update changes by ≤ tol relative; raises RuntimeError if that does not happen
    within max_iter sweeps. λ = 0 with α < 1 is solved in the rescaled variables W = λV, V̂/λ,
    q̂/λ², whose λ → 0⁺ equations are the same system with λ = 1 and 1 + V → V. λ = 0 with
    α = 1 has no finite solution (ValueError).
    """
    _check_args(alpha, lam)
    if lam == 0 and alpha == 1:
        raise ValueError("ε_g diverges at α = 1 for λ = 0 (interpolation peak)")
    interpolating = lam == 0 and alpha < 1
    lam_eff, offset = (1.0, 0.0) if interpolating else (lam, 1.0)
    state = np.array([1.0, 0.0, 0.0])
    for n_iter in range(1, max_iter + 1):
        new = _saddle_map(state, task, alpha, lam_eff, offset)
        if not np.all(np.isfinite(new)):
            raise RuntimeError(
                f"saddle point diverged after {n_iter} sweeps at α = {alpha}, λ = {lam}"
            )
        converged = np.all(np.abs(new - state) <= tol * np.abs(new))
        state = damping * state + (1 - damping) * new
        if converged:
            break
    else:
        raise RuntimeError(
            f"saddle point did not converge in {max_iter} sweeps at α = {alpha}, λ = {lam}"
        )
    V, m, q = state
    eps_g = task.sigma2 + task.rho - 2 * m + q
    v_hat = alpha / (offset + V)
    if interpolating:
        V, kappa, v_hat = np.inf, 1 / v_hat, 0.0
    else:
        kappa = lam / v_hat
    return SaddlePoint(
        alpha=float(alpha),
        lam=float(lam),
        m=float(m),
        q=float(q),
        V=float(V),
        m_hat=float(v_hat),
        q_hat=float(eps_g * v_hat**2 / alpha),
        V_hat=float(v_hat),
        kappa=float(kappa),
        eps_g=float(eps_g),
        n_iter=n_iter,
    )


def solve_kappa(task: GaussianTask, alpha: float, lam: float) -> float:
    """Effective ridge κ of the deterministic equivalent, by brentq.

    κ solves κ − λ_n = κ d₁(κ), d₁ = (1/n) Σ_k ω_k/(ω_k + κ), n = αp, λ_n = λ/α. Written as
    h(κ) = 1 − λ_n/κ − d₁(κ) = 0, h is increasing, so the positive root is unique; it exists for
    λ > 0 or α < 1. κ = 0 for λ = 0, α ≥ 1.
    """
    _check_args(alpha, lam)
    omega, _ = task.spectrum
    n, lam_n = alpha * omega.size, lam / alpha
    if lam == 0 and alpha >= 1:
        return 0.0

    def h(kappa: float) -> float:
        return 1 - lam_n / kappa - np.sum(omega / (omega + kappa)) / n

    # h(λ_n) < 0; for λ = 0, d₁ ≥ ω_min/(α(ω_min + κ)) ≥ 1 below ω_min(1/α − 1); h(hi) > 0.
    lo = max(lam_n, omega[0] * (1 / alpha - 1))
    hi = lam_n + omega.sum() / n
    return brentq(h, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps)


def kappa_error(task: GaussianTask, alpha: float, lam: float) -> float:
    """Closed-form ε_g = σ² + [κ² Σ_k ω_k t_k/(ω_k+κ)² + σ² df₂]/(1 − df₂) (∞ at λ = 0, α = 1).

    df₂ = (1/n) Σ_k ω_k²/(ω_k + κ)², κ from :func:`solve_kappa`.
    """
    omega, t = task.spectrum
    kappa = solve_kappa(task, alpha, lam)
    df2 = np.sum((omega / (omega + kappa)) ** 2) / (alpha * omega.size)
    if df2 >= 1:
        return np.inf
    bias = kappa**2 * np.sum(omega * t / (omega + kappa) ** 2)
    return float(task.sigma2 + (bias + task.sigma2 * df2) / (1 - df2))


def generalisation_curve(
    task: GaussianTask,
    alphas: np.ndarray,
    lam: float,
    method: Literal["kappa", "saddle"] = "kappa",
) -> np.ndarray:
    """Theory ε_g at each α of alphas (any shape) for ridge λ; same shape as alphas.

    At λ = 0, α = 1 the "kappa" method returns ∞ and the "saddle" method raises ValueError.
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    if method == "kappa":
        errors = [kappa_error(task, a, lam) for a in alphas.ravel()]
    elif method == "saddle":
        errors = [solve_saddle_point(task, a, lam).eps_g for a in alphas.ravel()]
    else:
        raise ValueError(f"unknown method {method!r}")
    return np.reshape(errors, alphas.shape)
