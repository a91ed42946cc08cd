"""Head scores from the order parameter and head pruning (Tiberi et al. 2024, Fig. 3e-f).

Heads are ``(layer, h)`` pairs, 0-based; a network has ``H`` heads in each of ``L`` layers and
``H^L`` paths, flattened h_1-major. The score of a head is the total ``|U_ππ'|`` over the entries
whose row path or column path passes through it, normalised by the largest score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Head = tuple[int, int]


def path_heads(layers: int, heads: int) -> np.ndarray:
    """``(H^L, L)``: the head of every layer on each path (h_1-major)."""
    return np.array(list(np.ndindex(*([heads] * layers))), dtype=np.int64).reshape(-1, layers)


def path_labels(layers: int, heads: int) -> list[str]:
    """Path names such as ``"13"`` (head 1 in layer 1, head 3 in layer 2), 1-based."""
    return ["".join(str(h + 1) for h in path) for path in path_heads(layers, heads)]


def scores(U: np.ndarray, layers: int, heads: int) -> np.ndarray:
    """Normalised head scores ``(L, H)`` from ``U: (H^L, H^L)``."""
    A, through = np.abs(np.asarray(U)), path_heads(layers, heads)
    out = np.zeros((layers, heads))
    for layer, h in np.ndindex(layers, heads):
        on = through[:, layer] == h
        out[layer, h] = A[on].sum() + A[:, on].sum() - A[np.ix_(on, on)].sum()
    return out / out.max()


def pruning_orders(score: np.ndarray) -> dict[str, list[Head]]:
    """Heads by increasing (``ascending``) and decreasing (``descending``) score."""
    order = [tuple(int(i) for i in np.unravel_index(k, score.shape))
             for k in np.argsort(score, axis=None, kind="stable")]
    return {"ascending": order, "descending": order[::-1]}


def removal_sequence(order: Sequence[Head], layers: int, heads: int) -> list[Head]:
    """The heads of ``order`` in turn, skipping any whose removal would leave its layer empty."""
    left, out = [heads] * layers, []
    for layer, h in order:
        if left[layer] > 1:
            left[layer] -= 1
            out.append((layer, h))
    return out


def keep_mask(layers: int, heads: int, removed: Sequence[Head]) -> tuple[jnp.ndarray, ...]:
    """Per layer a ``(H,)`` 0/1 mask of the heads kept."""
    mask = np.ones((layers, heads), np.float32)
    for layer, h in removed:
        mask[layer, h] = 0.0
    return tuple(jnp.asarray(m) for m in mask)


class Pruning(NamedTuple):
    """``full``: accuracy of the whole network; ``single: (L, H)`` with one head removed;
    ``removed[name]: (k, 2)`` the heads (layer, head) removed in turn and ``cumulative[name]:
    (k + 1,)`` the accuracy after 0..k removals, for the orders ``ascending`` and ``descending``
    score; ``random_removed: (R, k, 2)`` and ``random: (R, k + 1,)`` for R random orders."""

    full: float
    single: np.ndarray
    removed: dict[str, np.ndarray]
    cumulative: dict[str, np.ndarray]
    random_removed: np.ndarray
    random: np.ndarray

    def datasets(self) -> dict[str, np.ndarray]:
        """``single``, ``removed/{ascending,descending,random}``, ``cumulative/{...}``."""
        return {"single": self.single, "removed/random": self.random_removed,
                "cumulative/random": self.random,
                **{f"removed/{k}": v for k, v in self.removed.items()},
                **{f"cumulative/{k}": v for k, v in self.cumulative.items()}}


def prune(accuracy: Callable[[tuple[jnp.ndarray, ...]], float], score: np.ndarray,
          key: jax.Array, n_random: int) -> Pruning:
    """Single-head and cumulative pruning of a network with heads scored ``score: (L, H)``;
    ``accuracy(keep)`` evaluates it with the heads of ``keep_mask`` kept. Cumulative orders:
    by score and ``n_random`` uniformly random orders (from ``key``), each skipping a layer's last
    head (``removal_sequence``)."""
    layers, heads = score.shape

    def curve(order: Sequence[Head]) -> tuple[np.ndarray, np.ndarray]:
        removable = removal_sequence(order, layers, heads)
        acc = [accuracy(keep_mask(layers, heads, removable[:k]))
               for k in range(len(removable) + 1)]
        return np.array(removable, np.int64).reshape(-1, 2), np.array(acc)

    single = np.zeros(score.shape)
    for layer, h in np.ndindex(layers, heads):
        single[layer, h] = accuracy(keep_mask(layers, heads, [(layer, h)]))
    removed, cumulative = {}, {}
    for name, order in pruning_orders(score).items():
        removed[name], cumulative[name] = curve(order)
    heads_all = [(int(k) // heads, int(k) % heads) for k in range(layers * heads)]
    perms = [np.asarray(jax.random.permutation(k, layers * heads))
             for k in jax.random.split(key, n_random)]
    randoms = [curve([heads_all[i] for i in perm]) for perm in perms]
    return Pruning(accuracy(keep_mask(layers, heads, [])), single, removed, cumulative,
                   np.array([r[0] for r in randoms]).reshape(n_random, -1, 2),
                   np.array([r[1] for r in randoms]).reshape(n_random, -1))
