"""The hidden-Markov-chain classification task (Tiberi et al. 2024, Fig. 2): data and heads (the
experiments' networks: ``workflow_lib.attention.designs``).

A sequence is ``x: (N0, T+1)`` with ``N0 = D + T + 1``: ``D`` features (a visible token
``v_± + noise`` per hidden state; a zero BOS token first) stacked on a one-hot position code.
Class ``y = +1`` keeps its hidden state with probability ``p_plus`` (0.7), class ``y = -1`` with
``p_minus`` (0.3). Noise is isotropic per token with strength ``in_plane`` along ``v+ - v-`` and
``v+ + v-`` and ``sigma_perp`` (the paper's σ⊥) in the ``D - 2`` other directions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.core.config import schema_default


@dataclass(frozen=True)
class MarkovTask:
    """Parameters of the data: ``tokens`` T, ``features`` D (even), stay probabilities per class,
    noise strengths, and the attention sharpness ``beta`` with the random heads' perturbation.
    Defaults: the schema's ``paths`` section (σ⊥ of the four-path experiment)."""

    tokens: int = schema_default("paths.tokens")
    features: int = schema_default("paths.features")
    p_plus: float = schema_default("paths.p_stay_plus")
    p_minus: float = schema_default("paths.p_stay_minus")
    in_plane: float = schema_default("paths.noise_in_plane")
    sigma_perp: float = schema_default("paths.sigma_perp.four_paths")
    beta: float = schema_default("paths.attention_beta")
    perturbation: float = schema_default("paths.random_head_perturbation")

    @property
    def width(self) -> int:
        """N0 = D + T + 1."""
        return self.features + self.tokens + 1

    def visible(self) -> tuple[np.ndarray, np.ndarray]:
        """``v_+, v_-: (D,)`` = sqrt(2) times the indicator of the first / second half."""
        half = np.repeat([1.0, 0.0], self.features // 2) * np.sqrt(2.0)
        return half, half[::-1].copy()

    def readout(self) -> jax.Array:
        """``r = e_T: (T+1,)``: the last token."""
        return jnp.zeros(self.tokens + 1).at[-1].set(1.0)


def hidden_states(key: jax.Array, labels: jax.Array, task: MarkovTask) -> jax.Array:
    """``states: (B, T)`` in ±1; ``labels: (B,)`` in ±1 chooses the stay probability."""
    k_first, k_flip = jax.random.split(key)
    first = jnp.where(jax.random.bernoulli(k_first, 0.5, labels.shape), 1.0, -1.0)
    stay = jnp.where(labels > 0, task.p_plus, task.p_minus)[:, None]
    flips = jax.random.bernoulli(k_flip, 1.0 - stay, (labels.shape[0], task.tokens - 1))
    signs = jnp.concatenate([first[:, None], jnp.where(flips, -1.0, 1.0)], axis=1)
    return jnp.cumprod(signs, axis=1)


def sequences(key: jax.Array, states: jax.Array, task: MarkovTask) -> jax.Array:
    """``x: (B, N0, T+1)`` from ``states: (B, T)``: noisy visible tokens after a zero BOS token,
    on top of the one-hot position code."""
    v_plus, v_minus = (jnp.asarray(v) for v in task.visible())
    B, T = states.shape
    clean = jnp.where(states[:, None, :] > 0, v_plus[None, :, None], v_minus[None, :, None])
    noise = jax.random.normal(key, clean.shape)
    in_plane = jnp.zeros_like(noise)
    for direction in (v_plus - v_minus, v_plus + v_minus):
        e = direction / jnp.linalg.norm(direction)
        in_plane += e[None, :, None] * jnp.einsum("i,bit->bt", e, noise)[:, None, :]
    tokens = clean + task.in_plane * in_plane + task.sigma_perp * (noise - in_plane)
    features = jnp.concatenate([jnp.zeros((B, task.features, 1)), tokens], axis=2)
    positions = jnp.broadcast_to(jnp.eye(T + 1), (B, T + 1, T + 1))
    return jnp.concatenate([features, positions], axis=1)


@partial(jax.jit, static_argnames=("n", "task"))
def dataset(key: jax.Array, n: int, task: MarkovTask) -> tuple[jax.Array, jax.Array]:
    """``x: (n, N0, T+1)`` and balanced labels ``y: (n,)`` (first half +1, then -1); n even.
    One compiled program (op by op, its many small shapes compile one by one)."""
    labels = jnp.repeat(jnp.array([1.0, -1.0]), n // 2)
    k_states, k_noise = jax.random.split(key)
    return sequences(k_noise, hidden_states(k_states, labels, task), task), labels


def head(kind: str, task: MarkovTask, key: jax.Array | None = None) -> jax.Array:
    """Query-key matrix ``W: (N0, N0)`` = β blockdiag(W_feat, W_pos) (+ random cross blocks).

    ``same``: W_feat = q qᵀ with q = (v+ - v-)/(|v+ - v-|²/2), W_pos = 1 at (key t-1, query t)
    and 1.5 at (key BOS, query t ≥ 1): a query attends to the previous token if it is in the
    same state, else to BOS. ``uniform``: W_pos all ones. ``random``: N(0,1)/D feature block,
    N(0,1) position block, N(0,1)/sqrt(D) cross blocks, each times ``task.perturbation``.
    """
    D, n_pos = task.features, task.tokens + 1
    feat, pos = jnp.zeros((D, D)), jnp.zeros((n_pos, n_pos))
    cross = jnp.zeros((task.width, task.width))
    if kind == "same":
        v_plus, v_minus = task.visible()
        w = v_plus - v_minus
        q = jnp.asarray(w / (w @ w / 2))
        feat = jnp.outer(q, q)
        pos = jnp.diag(jnp.ones(n_pos - 1), 1).at[0, 1:].set(1.5)
    elif kind == "uniform":
        pos = jnp.ones((n_pos, n_pos))
    elif kind == "random":
        k_feat, k_pos, k_cross = jax.random.split(key, 3)
        feat = task.perturbation * jax.random.normal(k_feat, (D, D)) / D
        pos = task.perturbation * jax.random.normal(k_pos, (n_pos, n_pos))
        mask = 1.0 - jax.scipy.linalg.block_diag(jnp.ones((D, D)), jnp.ones((n_pos, n_pos)))
        cross = task.perturbation * mask * jax.random.normal(k_cross, cross.shape) / np.sqrt(D)
    else:
        raise ValueError(f"unknown head kind {kind!r}; allowed: same, uniform, random")
    return task.beta * (jax.scipy.linalg.block_diag(feat, pos) + cross)


@partial(jax.jit, static_argnames="task")
def heads(key: jax.Array, task: MarkovTask) -> dict[str, jax.Array]:
    """The named heads of ``designs.EXPERIMENTS``: same, uniform, random1 (layer 1), random2
    (layer 2), the random ones drawn from independent subkeys of ``key``."""
    k1, k2 = jax.random.split(key)
    return {
        "same": head("same", task),
        "uniform": head("uniform", task),
        "random1": head("random", task, k1),
        "random2": head("random", task, k2),
    }
