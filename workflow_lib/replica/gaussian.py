"""Gaussian model of Rende et al. 2024 (App. B): s ~ N(0, Σ), Σ = (ΔI − J)⁻¹, with one masked site.

Conventions: L sites, masked site i, features x = s_{\\i} ∈ R^p with p = L − 1, label y = s_i.
Conditioning on x gives the teacher and the intrinsic label noise

    y = w*·x + ε,   w*_j = J_ij / (Δ − J_ii),   ε ~ N(0, σ²),   σ² = 1 / (Δ − J_ii).
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np


def goe_couplings(rng: np.random.Generator, L: int) -> np.ndarray:
    """J: (L, L) symmetric GOE, J = (G + Gᵀ)/√(2L), semicircle on [−2, 2].

    Off-diagonal variance 1/L, diagonal variance 2/L.
    """
    g = rng.standard_normal((L, L))
    return (g + g.T) / np.sqrt(2 * L)


@dataclass(frozen=True, eq=False)
class GaussianTask:
    """One instance of the masked-site regression problem (arrays are read-only).

    Sigma: (L, L) covariance of s; Omega: (p, p) = Sigma without row/column `site`;
    w_star: (p,) teacher; sigma2: label-noise variance; rho = w*ᵀΩw*, so sigma2 + rho = Σ_ii.
    """

    Sigma: np.ndarray
    Omega: np.ndarray
    w_star: np.ndarray
    sigma2: float
    rho: float
    site: int

    @property
    def L(self) -> int:
        return self.Sigma.shape[0]

    @property
    def p(self) -> int:
        return self.Omega.shape[0]

    @cached_property
    def spectrum(self) -> tuple[np.ndarray, np.ndarray]:
        """(ω, t): ω (p,) ascending eigenvalues of Ω = Σ_k ω_k u_k u_kᵀ; t (p,) = (u_k·w*)²."""
        omega, u = np.linalg.eigh(self.Omega)
        return omega, (u.T @ self.w_star) ** 2

    @cached_property
    def cholesky(self) -> np.ndarray:
        """(L, L) lower-triangular C with C Cᵀ = Σ."""
        return np.linalg.cholesky(self.Sigma)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def gaussian_task(J: np.ndarray, delta: float, site: int = 0) -> GaussianTask:
    """Build the task for couplings J: (L, L) symmetric and shift Δ > 2, masking `site`."""
    J = np.asarray(J, dtype=np.float64)
    L = J.shape[0]
    if J.shape != (L, L) or not np.allclose(J, J.T):
        raise ValueError(f"J must be a square symmetric matrix, got shape {J.shape}")
    if not delta > 2:
        raise ValueError(f"Δ = {delta} must exceed 2 (GOE semicircle edge) for Σ = (ΔI − J)⁻¹ > 0")
    if delta <= np.linalg.eigvalsh(J)[-1]:
        raise ValueError(f"Δ = {delta} does not exceed the top eigenvalue of J; Σ is not PD")
    if not 0 <= site < L:
        raise ValueError(f"site {site} out of range for L = {L}")
    sigma = np.linalg.inv(delta * np.eye(L) - J)
    sigma = (sigma + sigma.T) / 2
    rest = np.delete(np.arange(L), site)
    omega = sigma[np.ix_(rest, rest)]
    sigma2 = 1.0 / (delta - J[site, site])
    w_star = J[site, rest] * sigma2
    return GaussianTask(
        Sigma=_readonly(sigma),
        Omega=_readonly(omega),
        w_star=_readonly(w_star),
        sigma2=float(sigma2),
        rho=float(w_star @ omega @ w_star),
        site=site,
    )


def sample_sequences(
    rng: np.random.Generator, task: GaussianTask, M: int
) -> tuple[np.ndarray, np.ndarray]:
    """M i.i.d. sequences s ~ N(0, Σ) via Cholesky; returns x: (M, p) = s_{\\i}, y: (M,) = s_i."""
    s = rng.standard_normal((M, task.L)) @ task.cholesky.T
    return np.delete(s, task.site, axis=1), s[:, task.site]
