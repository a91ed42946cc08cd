"""The deep multi-head attention network of Tiberi et al. 2024 in its path form.

Conventions: a sequence is ``x: (N0, T)`` (features x tokens); an attention matrix is
``Omega: (T, T)`` with keys as rows and queries as columns (columns sum to 1); paths
``pi = (h_1, ..., h_L)`` are flattened with ``h_1`` the slowest index; the path-attended inputs of
P sequences are ``Phi: (P, N0, Pi)`` = sqrt(σ0²/(N0 Π)) ξ^π(x^μ), so that the kernel with order
parameter ``U: (Pi, Pi)`` is ``K_U(x, x') = Σ_ππ' U_ππ' Φ_:π(x)·Φ_:π'(x')``.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.core.config import schema_default

BATCH = 128  # sequences per step of the attention map (bounds memory at O(BATCH H T N0))


def attention(x: jax.Array, W: jax.Array) -> jax.Array:
    """Attention of heads ``W: (H, N0, N0)`` (logits ``x_sᵀ W x_t``) on one ``x: (N0, T)``.

    Returns ``Omega: (H, T, T)``, softmax over the key index s (axis -2).
    """
    return jax.nn.softmax((x.T @ W) @ x, axis=-2)


def path_attention(omegas: Sequence[jax.Array], readout: jax.Array) -> jax.Array:
    """Per-path token weights ``Ω^(1,h1) ... Ω^(L,hL) r: (Pi, T)``, paths h1-major.

    ``omegas``: one ``(H_l, T, T)`` per layer; ``readout: (T,)``.
    """
    c = readout[None]
    for omega in reversed(omegas):
        c = jnp.einsum("hst,pt->hps", omega, c).reshape(-1, readout.shape[0])
    return c


@jax.jit
def attention_maps(x: jax.Array, W: jax.Array) -> jax.Array:
    """``Omega: (B, H, T, T)`` of heads ``W: (H, N0, N0)`` on ``x: (B, N0, T)``, in batches."""
    return jax.lax.map(lambda xs: attention(xs, W), x, batch_size=BATCH)


@jax.jit
def _features(x: jax.Array, omegas: tuple[jax.Array, ...], readout: jax.Array) -> jax.Array:
    def one(args: tuple[jax.Array, tuple[jax.Array, ...]]) -> jax.Array:
        xs, oms = args
        return xs @ path_attention(oms, readout).T

    return jax.lax.map(one, (x, omegas), batch_size=BATCH)


def path_features(
    x: jax.Array,
    omegas: Sequence[jax.Array],
    readout: jax.Array,
    sigma0_sq: float = schema_default("paths.prior_variance"),
) -> jax.Array:
    """``Phi: (B, N0, Pi)`` = sqrt(σ0²/(N0 Π)) x Ω^(1,h1) ... Ω^(L,hL) r for ``x: (B, N0, T)``.

    ``omegas``: one ``(B, H_l, T, T)`` stack of attention maps per layer (``attention_maps``);
    ``readout: (T,)``.
    """
    n_paths = int(np.prod([om.shape[1] for om in omegas]))
    scale = np.sqrt(sigma0_sq / (x.shape[1] * n_paths))
    return _features(jnp.asarray(x), tuple(omegas), readout) * scale


def kernel(phi_a: jax.Array, phi_b: jax.Array, U: jax.Array) -> jax.Array:
    """``K_U: (Pa, Pb)`` from ``phi_a: (Pa, N0, Pi)``, ``phi_b: (Pb, N0, Pi)``, ``U: (Pi, Pi)``,
    in O(Pa Pb N0 Pi) without forming the Π² path-path kernels."""
    left = (phi_a @ U).reshape(phi_a.shape[0], -1)
    return left @ phi_b.reshape(phi_b.shape[0], -1).T


def path_kernels(phi: jax.Array) -> jax.Array:
    """The Π² path-path kernels ``C_ππ'/Π: (Pi, Pi, P, P)`` of ``phi: (P, N0, Pi)``, so that
    ``K_U = Σ_ππ' U_ππ' C_ππ'/Π``: O(Π² P²) memory, for small problems evaluated many times (the
    sampler), where it makes ``K_U`` O(Π² P²) instead of O(P² N0 Π)."""
    return jnp.einsum("aip,biq->pqab", phi, phi)


def kernel_diagonal(phi: jax.Array, U: jax.Array) -> jax.Array:
    """``K_U(x, x): (P,)`` for ``phi: (P, N0, Pi)``."""
    return jnp.einsum("aip,pq,aiq->a", phi, U, phi)


def suffix_vectors(a: jax.Array, values: Sequence[jax.Array]) -> list[jax.Array]:
    """Effective-weight suffix vectors ``ū^(l)`` of the theory (Tiberi et al. 2024), l = 1..L.

    ``a: (Na,)``; ``values``: ``V^(l): (H_l, N_{l+1}, N_l)`` for l = 1..L (``N_{L+1} = Na``).
    Returns ``[ū^(1): (Pi, N1), ..., ū^(L): (H_L, N_L)]``, suffixes h_l-major.
    """
    u, out = a[None] / jnp.sqrt(a.shape[0]), []
    for V in reversed(values):
        u = jnp.einsum("hji,pj->hpi", V, u).reshape(-1, V.shape[-1]) / jnp.sqrt(V.shape[-1])
        out.append(u)
    return out[::-1]


def readout(phi: jax.Array, W: jax.Array) -> jax.Array:
    """``f: (P,)`` = Σ_π W_π·Φ_:π for ``phi: (P, N0, Pi)`` and effective weights ``W: (Pi, N0)``
    (of a network: ``W = ū V0`` with ``ū: (Pi, N1)`` and ``V0: (N1, N0)`` of unit prior
    variance, σ0 being inside Φ)."""
    return jnp.einsum("aip,pi->a", phi, W)
