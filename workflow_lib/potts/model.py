"""Generalised Potts model (Rende et al. 2024; conditional: their eq. 5).

Conventions
-----------
- ``seqs``: integer colours, shape ``(..., L)``, values in ``0..C-1``; one-hot only inside models.
- ``J``: ``(L, L)`` symmetric, zero diagonal (couples positions).
- ``U``: ``(C, C)`` symmetric (couples colours); ``U = I`` is the standard Potts model.
- Hamiltonian ``H(s) = -1/2 sum_{i != j} J_ij U[s_i, s_j]``, Boltzmann weight ``exp(-beta H)``.
- Exact conditional (paper eq. 5), the one function every stage uses:
  ``P(s_i = a | rest) ∝ exp(beta sum_{j != i} J_ij U[a, s_j])``.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def random_couplings(key: Array, L: int, dtype=jnp.float64) -> Array:
    """``J: (L, L)`` symmetric, zero diagonal, i.i.d. N(0, 1) entries above the diagonal."""
    g = jax.random.normal(key, (L, L), dtype)
    upper = jnp.triu(g, k=1)
    return upper + upper.T


def random_colour_couplings(key: Array, C: int, kind: str = "gaussian", dtype=jnp.float64) -> Array:
    """``U: (C, C)`` symmetric. ``kind='gaussian'``: i.i.d. N(0, 1) on and above the diagonal
    (the project's default: the paper does not give U's law); ``kind='identity'``: the standard
    Potts model."""
    if kind == "identity":
        return jnp.eye(C, dtype=dtype)
    if kind != "gaussian":
        raise ValueError(f"unknown colour-coupling kind {kind!r}; allowed: 'gaussian', 'identity'")
    g = jax.random.normal(key, (C, C), dtype)
    upper = jnp.triu(g)
    return upper + jnp.triu(g, k=1).T


def draw_couplings(key: Array, L: int, C: int, u_kind: str) -> tuple[np.ndarray, np.ndarray]:
    """One realisation: ``J: (L, L)`` symmetric zero-diagonal N(0, 1), ``U: (C, C)`` of
    ``u_kind`` (float64 numpy arrays)."""
    k_j, k_u = jax.random.split(key)
    return np.asarray(random_couplings(k_j, L)), np.asarray(random_colour_couplings(k_u, C, u_kind))


def local_fields(seqs: Array, J: Array, U: Array, beta: float | Array) -> Array:
    """Logits of the exact conditional, ``(..., L, C)``: ``h_i(a) = beta sum_j J_ij U[a, s_j]``.

    ``seqs: (..., L)`` int; the ``j = i`` term vanishes because ``J_ii = 0``.
    """
    return beta * jnp.einsum("ij,...jc->...ic", J, U[seqs])  # U symmetric: U[s_j, a] = U[a, s_j]


def conditional_log_probs(seqs: Array, J: Array, U: Array, beta: float | Array) -> Array:
    """``log P(s_i = a | s_{\\i})``, shape ``(..., L, C)`` (paper eq. 5)."""
    return jax.nn.log_softmax(local_fields(seqs, J, U, beta), axis=-1)


def optimal_loss(seqs: Array, J: Array, U: Array, beta: float | Array) -> Array:
    """Bayes-optimal MLM cross-entropy in nats: mean over sequences and sites of
    ``-log P_true(s_i | s_{\\i})`` (Rende et al. 2024, Fig. 2a, dashed line). ``seqs: (M, L)``;
    returns a scalar."""
    logp = conditional_log_probs(seqs, J, U, beta)
    return -jnp.mean(jnp.take_along_axis(logp, seqs[..., None], axis=-1))


def energy(seqs: Array, J: Array, U: Array) -> Array:
    """``H(s) = -1/2 sum_{i != j} J_ij U[s_i, s_j]``; ``seqs: (..., L)`` -> ``(...)``."""
    pair = U[seqs[..., :, None], seqs[..., None, :]]  # (..., L, L)
    return -0.5 * jnp.sum(J * pair, axis=(-2, -1))


def mean_pairwise_hamming(seqs: np.ndarray) -> float:
    """Mean normalised Hamming distance over all unordered pairs of rows of ``seqs: (n, L)``.

    Computed from colour counts per site in O(n L C): pairs that agree at site i number
    ``sum_a n_ia (n_ia - 1) / 2``.
    """
    seqs = np.asarray(seqs)
    n, L = seqs.shape
    if n < 2:
        raise ValueError("need at least two sequences to measure a Hamming distance")
    C = int(seqs.max()) + 1
    counts = np.stack([np.bincount(col, minlength=C) for col in seqs.T])  # (L, C)
    agree = (counts * (counts - 1) / 2).sum()
    return float(1.0 - agree / (L * n * (n - 1) / 2))


# ---------------------------------------------------------------- exact enumeration (tiny L, C)


def all_configurations(L: int, C: int) -> np.ndarray:
    """Every sequence, ``(C**L, L)`` int, in lexicographic order. Only for tiny systems."""
    if C**L > 2_000_000:
        raise ValueError(f"C**L = {C**L} configurations is too many to enumerate")
    return np.array(list(itertools.product(range(C), repeat=L)), dtype=np.int32)


def exact_distribution(J: Array, U: Array, beta: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Boltzmann distribution by enumeration: ``(configs (C**L, L), probs (C**L,), log Z)``."""
    L, C = J.shape[0], U.shape[0]
    configs = all_configurations(L, C)
    logw = -beta * np.asarray(energy(jnp.asarray(configs), J, U), dtype=np.float64)
    log_z = float(np.logaddexp.reduce(logw))
    return configs, np.exp(logw - log_z), log_z


def exact_marginals(J: Array, U: Array, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """One- and two-site marginals by enumeration: ``p1: (L, C)``, ``p2: (L, L, C, C)``."""
    C = U.shape[0]
    configs, probs, _ = exact_distribution(J, U, beta)
    onehot = np.eye(C)[configs]  # (K, L, C)
    p1 = np.einsum("k,kia->ia", probs, onehot)
    p2 = np.einsum("k,kia,kjb->ijab", probs, onehot, onehot)
    return p1, p2
