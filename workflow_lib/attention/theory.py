"""The finite-width theory of Tiberi et al. 2024: the action S(U), its minimum, and the predictor.

Order parameters of a network with heads ``H = (H_1, ..., H_L)`` at equal widths N: the
hierarchy ``Us = [U^(1): (Pi, Pi), ..., U^(L): (H_L, H_L)]`` (``U^(l)`` of size
``(H_l ... H_L)²``, suffixes h_l-major) and the scalar ``U_a``, solved in closed form. All prior
variances are ``sigma2``; ``T`` is the temperature (the likelihood variance). The minimum is
found over Cholesky factors ``U^(l) = L_l L_lᵀ`` (positive definite by construction) with
L-BFGS in float64, starting from the GP point.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from workflow_lib.attention import model
from workflow_lib.core.config import schema_default

PRIOR_VARIANCE = schema_default("paths.prior_variance")

log = logging.getLogger("workflow_lib.attention")


def sizes(heads: Sequence[int]) -> list[int]:
    """Sizes of ``U^(1), ..., U^(L)``: ``H_l ... H_L``."""
    return [int(np.prod(heads[layer:])) for layer in range(len(heads))]


def gp_order_parameters(heads: Sequence[int], sigma2: float = PRIOR_VARIANCE) -> list[jax.Array]:
    """The N → ∞ point: ``U^(l) = σ^(2(L-l+2)) I`` (``U = I`` for unit variances)."""
    L = len(heads)
    return [sigma2 ** (L - layer + 1) * jnp.eye(m) for layer, m in enumerate(sizes(heads))]


def ua_closed_form(tr_top: jax.Array, h_top: int, sigma2: float) -> jax.Array:
    """``U_a`` minimising S at fixed ``Tr U^(L)`` (equal widths, equal variances):
    ``(-β + sqrt(β² + 4γ))/2`` with ``β = σ²(H_L - 1)``, ``γ = Tr U^(L)``."""
    beta = sigma2 * (h_top - 1)
    return 0.5 * (-beta + jnp.sqrt(beta**2 + 4.0 * tr_top))


def _logdet(A: jax.Array) -> jax.Array:
    return 2.0 * jnp.sum(jnp.log(jnp.diag(jnp.linalg.cholesky(A))))


def entropy(
    Us: Sequence[jax.Array], ua: jax.Array, heads: Sequence[int], N: float, sigma2: float
) -> jax.Array:
    """The O(N) part of S: the -2 ln of the Wishart/χ² densities of ``U_a`` and the ``U^(l)``."""
    top = Us[-1]
    s = N * (ua / sigma2 - jnp.log(ua))
    s += N * (jnp.trace(top) / (sigma2 * ua) - _logdet(top) + heads[-1] * jnp.log(ua))
    for layer in range(len(heads) - 1):
        U, above, m = Us[layer], Us[layer + 1], Us[layer + 1].shape[0]
        partial_trace = jnp.einsum("hahb->ab", U.reshape(heads[layer], m, heads[layer], m))
        s += N * (
            jnp.trace(jnp.linalg.solve(above, partial_trace)) / sigma2
            - _logdet(U)
            + heads[layer] * _logdet(above)
        )
    return s


def _ridge_solve(K: jax.Array, y: jax.Array, T: float) -> tuple[jax.Array, jax.Array]:
    """Cholesky factor of ``K + T I`` and ``(K + T I)⁻¹ y``."""
    chol = jnp.linalg.cholesky(K + T * jnp.eye(K.shape[0]))
    return chol, jax.scipy.linalg.cho_solve((chol, True), y)


def kernel_energy(K: jax.Array, y: jax.Array, T: float) -> jax.Array:
    """``ln det(K + T I) + Yᵀ (K + T I)⁻¹ Y`` for a training-set kernel ``K: (P, P)``."""
    chol, alpha = _ridge_solve(K, y, T)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(chol))) + y @ alpha


def energy(U: jax.Array, phi: jax.Array, y: jax.Array, T: float) -> jax.Array:
    """The energy E(U) of the action on the training set ``phi: (P, N0, Pi)``."""
    return kernel_energy(model.kernel(phi, phi, U), y, T)


def mean_weights(U: jax.Array, phi: jax.Array, y: jax.Array, T: float) -> jax.Array:
    """Posterior-mean effective weights ``W̄: (Pi, N0)`` of the GP with kernel ``K_U``:
    ``W̄_π = Σ_π' U_ππ' Σ_μ α_μ Φ_:π'(x^μ)``, so that ``<f(x*)> = model.readout(Φ(x*), W̄)``."""
    _, alpha = _ridge_solve(model.kernel(phi, phi, U), y, T)
    return U @ jnp.einsum("a,aip->pi", alpha, phi)


def action(
    Us: Sequence[jax.Array],
    phi: jax.Array,
    y: jax.Array,
    heads: Sequence[int],
    N: float,
    T: float,
    sigma2: float = PRIOR_VARIANCE,
) -> jax.Array:
    """The action S(U) with ``U_a`` at its closed-form optimum (a profile over ``U_a``)."""
    ua = ua_closed_form(jnp.trace(Us[-1]), heads[-1], sigma2)
    return entropy(Us, ua, heads, N, sigma2) + energy(Us[0], phi, y, T)


def _unpack(theta: jax.Array, heads: Sequence[int], symmetric: bool) -> list[jax.Array]:
    """Matrices from their lower-triangular entries: ``L_l`` (Cholesky factors) or, with
    ``symmetric``, the symmetric ``U^(l)``."""
    out, start = [], 0
    for m in sizes(heads):
        rows, cols = np.tril_indices(m)
        M = jnp.zeros((m, m)).at[rows, cols].set(theta[start : start + rows.size])
        out.append(M + jnp.tril(M, -1).T if symmetric else M)
        start += rows.size
    return out


def _pack(mats: Sequence[jax.Array]) -> jax.Array:
    return jnp.concatenate([M[np.tril_indices(M.shape[0])] for M in mats])


def _cholesky_objective(theta, phi, y, heads, N, T, sigma2):
    Us = [Lf @ Lf.T for Lf in _unpack(theta, heads, symmetric=False)]
    return action(Us, phi, y, heads, N, T, sigma2) / N


def _symmetric_objective(theta, phi, y, heads, N, T, sigma2):
    return action(_unpack(theta, heads, symmetric=True), phi, y, heads, N, T, sigma2) / N


_value_and_grad = jax.jit(jax.value_and_grad(_cholesky_objective), static_argnames="heads")


_symmetric_gradient = jax.jit(jax.grad(_symmetric_objective), static_argnames="heads")


@partial(jax.jit, static_argnames="heads")
def _grad_and_hessian(theta, phi, y, heads, N, T, sigma2):
    args = (phi, y, heads, N, T, sigma2)
    return (
        jax.grad(_symmetric_objective)(theta, *args),
        jax.hessian(_symmetric_objective)(theta, *args),
    )


@dataclass(frozen=True)
class Solution:
    """The minimum of S/N: ``Us`` (the hierarchy, ``Us[0] = U: (Pi, Pi)``), ``ua``, the action
    per width ``action``, L-BFGS ``iterations``, and the checks on the free (symmetric) entries:
    ``grad_max`` = max |∂(S/N)/∂U_ij| and ``hessian_min`` = the smallest Hessian eigenvalue."""

    Us: list[np.ndarray]
    ua: float
    action: float
    iterations: int
    grad_max: float
    hessian_min: float
    seconds: float


def stationarity(
    Us: Sequence[jax.Array],
    phi: jax.Array,
    y: jax.Array,
    heads: tuple[int, ...],
    N: float,
    T: float,
    sigma2: float = PRIOR_VARIANCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of S/N over the free entries (lower triangles) of the ``U^(l)``."""
    grad, hess = _grad_and_hessian(_pack(Us), phi, y, tuple(heads), N, T, sigma2)
    return np.asarray(grad), np.asarray(hess)


def minimise_action(
    phi: jax.Array,
    y: jax.Array,
    heads: Sequence[int],
    N: float,
    T: float,
    sigma2: float = PRIOR_VARIANCE,
    max_iter: int = schema_default("paths.solver.max_iter"),
    gtol: float = schema_default("paths.solver.gtol"),
    hessian: bool = True,
) -> Solution:
    """Minimise S/N with L-BFGS over Cholesky factors from the GP point (float64).

    ``hessian=False`` skips the Hessian check (``hessian_min`` is NaN): it costs one gradient
    per free entry, which dominates for large problems.
    """
    heads = tuple(heads)
    start = time.perf_counter()
    theta0 = _pack([jnp.linalg.cholesky(U) for U in gp_order_parameters(heads, sigma2)])
    args = (phi, y, heads, float(N), float(T), float(sigma2))

    def value_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = _value_and_grad(jnp.asarray(theta), *args)
        return float(value), np.asarray(grad)

    res = scipy.optimize.minimize(
        value_and_grad,
        np.asarray(theta0),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": gtol, "ftol": 1e-15, "maxcor": 30},
    )
    Us = [Lf @ Lf.T for Lf in _unpack(jnp.asarray(res.x), heads, symmetric=False)]
    if hessian:
        grad, hess = stationarity(Us, *args)
        hessian_min = float(np.linalg.eigvalsh(hess)[0])
    else:
        grad, hessian_min = _symmetric_gradient(_pack(Us), *args), float("nan")
    ua = ua_closed_form(jnp.trace(Us[-1]), heads[-1], sigma2)
    return Solution(
        Us=[np.asarray(U) for U in Us],
        ua=float(ua),
        action=float(res.fun),
        iterations=int(res.nit),
        grad_max=float(np.max(np.abs(grad))),
        hessian_min=hessian_min,
        seconds=time.perf_counter() - start,
    )


@jax.jit
def predictive_mean(
    phi_train: jax.Array, y: jax.Array, phi_test: jax.Array, U: jax.Array, T: float
) -> jax.Array:
    """The posterior mean of f on ``phi_test: (Pt, N0, Pi)``, ``kᵀ(K+TI)⁻¹Y: (Pt,)``, without
    the variance (an accuracy needs only its sign)."""
    return model.readout(phi_test, mean_weights(U, phi_train, y, T))


@jax.jit
def predictor(
    phi_train: jax.Array, y: jax.Array, phi_test: jax.Array, U: jax.Array, T: float
) -> tuple[jax.Array, jax.Array]:
    """Posterior mean and variance of f on ``phi_test: (Pt, N0, Pi)``: ``kᵀ(K+TI)⁻¹Y`` and
    ``K(x*, x*) - kᵀ(K+TI)⁻¹k``, both ``(Pt,)``."""
    chol, _ = _ridge_solve(model.kernel(phi_train, phi_train, U), y, T)  # shared under jit
    mean = predictive_mean(phi_train, y, phi_test, U, T)
    v = jax.scipy.linalg.solve_triangular(chol, model.kernel(phi_train, phi_test, U), lower=True)
    return mean, model.kernel_diagonal(phi_test, U) - jnp.sum(v**2, axis=0)


def accuracy(mean: jax.Array, y: jax.Array) -> float:
    """Fraction of inputs with sign(mean) = y."""
    return float(np.mean(np.sign(np.asarray(mean)) == np.asarray(y)))


def pc_overlaps(phi: jax.Array, y: jax.Array, U: jax.Array, n: int) -> np.ndarray:
    """``|v_k·Y|/sqrt(P)`` for the top-``n`` kernel PCs ``v_k`` of ``K_U`` on ``phi: (P, N0, Pi)``,
    by decreasing eigenvalue: ``(n,)``."""
    _, vecs = jnp.linalg.eigh(model.kernel(phi, phi, U))
    return np.asarray(jnp.abs(vecs[:, ::-1][:, :n].T @ y) / jnp.sqrt(y.shape[0]))
