"""The gradient-descent model of the one-shot task (Tiberi et al. 2024, Fig. 3), in JAX.

An input layer ``V0: (N, N0)`` (the theory's V^(0)), then ``len(heads)`` layers of ``H`` heads
each, summed with a factor ``1/sqrt(H)``: head h of layer l maps ``z -> Ω z V^(l,h)ᵀ`` with a value
``V^(l,h): (N, N)`` and an attention ``Ω`` computed from the *input* ``x0`` with learned query and
key maps ``Q, K: (G, N0)`` (logits ``(K x_s)·(Q x_t)/sqrt(G)``, softmax over keys s); no
residual, no MLP, no normalisation; mean pooling over tokens and a linear readout ``a: (N,)``.
Weights are in PyTorch's parameterisation (entries ~ U(±1/sqrt(fan_in)), no scale in the forward
pass), so the optimiser settings mean what they mean there. ``theory_weights`` rescales them to
the theory's convention (unit-variance entries, ``1/sqrt(fan_in)`` in the forward pass), with the
same function. Training: ``workflow_lib.studies.omniglot.training``.

Pruning removes heads: a layer with ``k`` heads left sums them with ``1/sqrt(k)``. The output is
a sum over the ``H^L`` paths of heads; ``path_outputs`` gives each path's term once, and every
pruned network's output is a weighting of them (``path_weights``), so pruning needs one pass.
Training uses ``forward``: every projection of ``x0`` in one matmul, the last layer only
mean-pooled.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from workflow_lib.attention.heads import path_heads

Params = dict[str, jax.Array]


class Net(NamedTuple):
    """Static sizes: width ``N``, head dimension ``G``, ``layers`` of ``heads`` heads, input
    width ``N0``."""

    width: int
    head_dim: int
    layers: int
    heads: int
    n0: int

    @property
    def per_layer(self) -> tuple[int, ...]:
        """Heads per layer, as the theory takes them."""
        return (self.heads,) * self.layers


INITS = ("pytorch", "lecun")


def init(key: jax.Array, net: Net, scheme: str = "pytorch") -> Params:
    """Initial weights ``V0: (N, N0)``, per layer ``Q{l}, K{l}: (H, G, N0)`` and
    ``V{l}: (H, N, N)``, ``a: (N,)``. ``scheme``: ``pytorch`` (nn.Linear's default, the paper's:
    entries uniform in ±1/sqrt(fan_in), variance 1/(3 fan_in)) or ``lecun`` (LeCun-normal:
    N(0, 1/fan_in), sqrt(3) larger, so sharper initial attention)."""
    if scheme not in INITS:
        raise ValueError(f"unknown initialisation {scheme!r}: one of {INITS}")
    shapes = {"V0": (net.width, net.n0), "a": (net.width,)}
    for layer in range(1, net.layers + 1):
        shapes |= {f"Q{layer}": (net.heads, net.head_dim, net.n0),
                   f"K{layer}": (net.heads, net.head_dim, net.n0),
                   f"V{layer}": (net.heads, net.width, net.width)}
    keys = jax.random.split(key, len(shapes))
    draw = {"pytorch": lambda k, shape: jax.random.uniform(k, shape, jnp.float32, -1.0, 1.0),
            "lecun": lambda k, shape: jax.random.normal(k, shape, jnp.float32)}[scheme]
    return {
        name: draw(k, shape) / float(np.sqrt(shape[-1]))
        for k, (name, shape) in zip(keys, sorted(shapes.items()), strict=True)
    }


def attention_logits_weights(params: Params, net: Net) -> list[jax.Array]:
    """The heads as bilinear forms ``W = Kᵀ Q / sqrt(G): (H, N0, N0)`` per layer (the theory's
    attention: logits ``x_sᵀ W x_t``)."""
    return [
        jnp.einsum("hgi,hgj->hij", params[f"K{layer}"], params[f"Q{layer}"]) / np.sqrt(net.head_dim)
        for layer in range(1, net.layers + 1)
    ]


def _projections(params: Params, net: Net, x0: jax.Array) -> tuple[jax.Array, list[jax.Array]]:
    """``z0 = x0 V0ᵀ: (B, T, N)`` and per layer the logits' softmax over keys ``Ω: (B, H, S, T)``
    of ``x0: (B, T, N0)``; every projection of ``x0`` (V0 and each layer's Q, K) is one matmul."""
    B, T, _ = x0.shape
    HG = net.heads * net.head_dim
    w = jnp.concatenate([params["V0"]] + [params[f"{m}{layer}"].reshape(HG, net.n0)
                                          for layer in range(1, net.layers + 1) for m in "QK"])
    proj = x0 @ w.T  # (B, T, N + 2 L H G)
    omegas = []
    for layer in range(net.layers):
        q, k = (proj[..., net.width + (2 * layer + i) * HG:net.width + (2 * layer + i + 1) * HG]
                .reshape(B, T, net.heads, net.head_dim) for i in (0, 1))
        logits = jnp.einsum("bshg,bthg->bhst", k, q) / np.sqrt(net.head_dim)
        omegas.append(jax.nn.softmax(logits, -2))
    return proj[..., :net.width], omegas


def _readout_vectors(params: Params, net: Net) -> jax.Array:
    """``V^(L,h)ᵀ a: (H, N)``: the readout pulled back through each last-layer head."""
    return jnp.einsum("hji,j->hi", params[f"V{net.layers}"], params["a"])


def forward(params: Params, net: Net, x0: jax.Array, keep: tuple[jax.Array, ...]) -> jax.Array:
    """Outputs ``f: (B,)`` on ``x0: (B, T, N0)``; ``keep``: per layer a ``(H,)`` 0/1 head mask.
    The last layer is only needed mean-pooled: ``f = Σ_h Σ_s r_hs z_s·(V^(L,h)ᵀ a)`` with
    ``r_hs`` the mean over queries of its attention."""
    z, omegas = _projections(params, net, x0)
    masks = [mask.astype(z.dtype) for mask in keep]
    norms = [mask / jnp.sqrt(jnp.sum(mask)) for mask in masks]
    for layer in range(1, net.layers):
        zv = jnp.einsum("bsi,hji->bshj", z, params[f"V{layer}"])
        z = jnp.einsum("h,bhst,bshj->btj", norms[layer - 1], omegas[layer - 1], zv)
    r = omegas[-1].mean(axis=-1)  # (B, H, S)
    return jnp.einsum("h,bhs,bsi,hi->b", norms[-1], r, z, _readout_vectors(params, net))


def path_outputs(params: Params, net: Net, x0: jax.Array) -> jax.Array:
    """``F: (B, H^L)``, paths h_1-major (``heads.path_heads``): each path's term of ``f`` with
    every head kept and without the ``1/sqrt(H)`` factors, ``F_π = aᵀ mean_t(Ω^(L,h_L) ...
    Ω^(1,h_1) z0 V^(1,h_1)ᵀ ... V^(L,h_L)ᵀ)``; then ``f = F @ path_weights(keep)`` for any
    pruning. Memory ``B H^(L-1) T N``."""
    B, T, _ = x0.shape
    z0, omegas = _projections(params, net, x0)
    y = z0[:, None]  # (B, paths so far, T, N)
    for layer in range(1, net.layers):
        zv = jnp.einsum("bpsi,hji->bphsj", y, params[f"V{layer}"])
        y = jnp.einsum("bhst,bphsj->bphtj", omegas[layer - 1], zv).reshape(B, -1, T, net.width)
    r = omegas[-1].mean(axis=-1)
    return jnp.einsum("bpsi,hi,bhs->bph", y, _readout_vectors(params, net), r).reshape(B, -1)


def path_weights(keep: tuple[jax.Array, ...]) -> np.ndarray:
    """``(H^L,)`` float64: each path's factor in ``f`` under the head masks ``keep`` (one
    ``(H,)`` 0/1 mask per layer): the product of its heads' masks over ``prod_l sqrt(#kept in
    layer l)``."""
    masks = np.stack([np.asarray(mask, np.float64) for mask in keep])  # (L, H)
    on_path = masks[np.arange(masks.shape[0])[:, None], path_heads(*masks.shape).T]  # (L, H^L)
    return np.prod(on_path, axis=0) / np.sqrt(np.prod(masks.sum(axis=1)))


def all_heads(net: Net) -> tuple[jax.Array, ...]:
    """The head masks of the unpruned network."""
    return tuple(jnp.ones(net.heads, jnp.float32) for _ in range(net.layers))


def theory_weights(params: Params, net: Net) -> tuple[jax.Array, list[jax.Array], jax.Array]:
    """``(a, [V^(1), ..., V^(L)], V^(0))`` in the theory's convention (``z^(0) = V^(0) x /
    sqrt(N0)``, ``z^(l) = Σ_h V^(l,h) z Ω / sqrt(H N)``, ``f = aᵀ z r / sqrt(N)``): the trained
    weights times sqrt(fan_in), the same function."""
    s = np.sqrt(net.width)
    values = [params[f"V{layer}"] * s for layer in range(1, net.layers + 1)]
    return params["a"] * s, values, params["V0"] * np.sqrt(net.n0)


@partial(jax.jit, static_argnames="net")
def outputs(params: Params, net: Net, x0: jax.Array) -> jax.Array:
    """``path_outputs`` of episodes ``x0: (n, T, N0)`` in batches of 128: ``(n, H^L)``."""
    return lax.map(lambda x: path_outputs(params, net, x[None])[0], x0, batch_size=128)


def network_accuracy(params: Params, net: Net, x0: jax.Array, y: jax.Array) -> float:
    """Fraction of episodes ``x0: (n, T, N0)`` with ``sign f = y``, no head pruned."""
    return accuracy(outputs(params, net, x0), y, all_heads(net))


def accuracy(paths: jax.Array, y: jax.Array, keep: tuple[jax.Array, ...]) -> float:
    """Fraction of episodes with ``sign f = y`` from their path outputs ``paths: (n, H^L)``
    (``outputs``), heads masked by ``keep`` (``all_heads``: none pruned)."""
    f = np.asarray(paths, np.float64) @ path_weights(keep)
    return float(np.mean(np.sign(f) == np.asarray(y)))
