"""The gradient-descent model of the one-shot task (spec ``attention_paths.md`` §4b), in JAX.

An input layer ``V0: (N, N0)`` (the theory's V^(0)), then ``len(heads)`` layers of ``H`` heads
each, summed with a factor ``1/sqrt(H)``: head h of layer l maps ``z -> Ω z V^(l,h)ᵀ`` with a value
``V^(l,h): (N, N)`` and an attention ``Ω`` computed from the *input* ``x0`` with learned query and
key maps ``Q, K: (G, N0)`` (logits ``(K x_s)·(Q x_t)/sqrt(G)``, softmax over keys s); no
residual, no MLP, no normalisation; mean pooling over tokens and a linear readout ``a: (N,)``.
Weights are in PyTorch's parameterisation (entries ~ U(±1/sqrt(fan_in)), no scale in the forward
pass), so the optimiser settings mean what they mean there. ``theory_weights`` rescales them to
the theory's convention (unit-variance entries, ``1/sqrt(fan_in)`` in the forward pass), with the
same function. Training: ``paths.omniglot_train``.

Pruning removes heads: a layer with ``k`` heads left sums them with ``1/sqrt(k)``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

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


def forward(params: Params, net: Net, x0: jax.Array, keep: tuple[jax.Array, ...]) -> jax.Array:
    """Outputs ``f: (B,)`` on ``x0: (B, T, N0)``; ``keep``: per layer a ``(H,)`` 0/1 head mask."""
    z = x0 @ params["V0"].T  # (B, T, N)
    for layer, mask in enumerate(keep, start=1):
        q = jnp.einsum("bti,hgi->bhtg", x0, params[f"Q{layer}"])
        k = jnp.einsum("bsi,hgi->bhsg", x0, params[f"K{layer}"])
        omega = jax.nn.softmax(jnp.einsum("bhsg,bhtg->bhst", k, q) / np.sqrt(net.head_dim), -2)
        heads = jnp.einsum("bhst,bsi,hji->bhtj", omega, z, params[f"V{layer}"])
        mask = mask.astype(heads.dtype)
        z = jnp.einsum("h,bhtj->btj", mask, heads) / jnp.sqrt(jnp.sum(mask))
    return z.mean(axis=1) @ params["a"]


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
def _outputs(params: Params, net: Net, x0: jax.Array, keep: tuple[jax.Array, ...]) -> jax.Array:
    return lax.map(lambda x: forward(params, net, x[None], keep)[0], x0, batch_size=128)


def accuracy(params: Params, net: Net, x0: jax.Array, y: jax.Array,
             keep: tuple[jax.Array, ...] | None = None) -> float:
    """Fraction of episodes ``x0: (n, T, N0)`` with ``sign f = y``, heads masked by ``keep``."""
    f = _outputs(params, net, x0, all_heads(net) if keep is None else keep)
    return float(np.mean(np.sign(np.asarray(f)) == np.asarray(y)))
