"""Masked-language models of Potts sequences (Rende et al. 2024, eqs. 2 and 4), as pure functions
over parameter pytrees.

Architectures (``ARCHS``), all predicting the colour of one masked site:

- ``factored`` (paper eq. 4): ``logits_i = sum_{j != i} A_ij V[:, s_j]`` with signed, unnormalised
  ``A: (L, L)`` (its diagonal is masked out, so ``A_ii`` is inert) and ``V: (C, C)``. This is a
  softmax regression with couplings ``J_ij(a, b) = A_ij V_ab`` (docs/design/training.md).
- ``factored_softmax``: the same with ``A`` replaced by its row-softmax over ``j != i``
  (ablation: the paper does not say whether ``A`` is normalised).
- ``interpolated`` (Rende et al. 2024, eq. 2, Fig. 2d): one layer of unnormalised bilinear
  attention on the ``(L + C)``-dim tokens ``x_att_j = p_j + a e_j``, ``x_val_j = e_j + a p_j``
  with one-hot positions ``p``, one-hot colours ``e`` (``E = I``) and the masked token's colour
  ``e_i = 0``.
  With ``W = W_Q^T W_K`` of full rank, the score of the masked query is
  ``x_att_i^T W x_att_j = A_ij + a A_col[i, s_j] [j != i]`` (the colour rows of ``W`` never meet
  the masked query ``x_att_i = p_i``), and the value map ``[V_pos | V]`` gives
  ``V[:, s_j] [j != i] + a V_pos[:, j]``. Hence
  ``logits_i = factored_i + a (A V_pos^T + sum_j G_ij (V[:, s_j] + a V_pos[:, j]))_i`` with
  ``G_ij = A_col[i, s_j] [j != i]``; parameters ``A, V, A_col: (L, C), V_pos: (C, L)`` (``A_ii``
  enters only through the masked token's own positional value, ``A_ii a V_pos[:, i]``). At
  ``a = 0`` the correction is an exact zero, so the model equals ``factored`` bit for bit with the
  same ``A, V`` (``init`` draws them from the same sub-keys for both).
- ``vanilla1`` / ``vanilla3`` (Rende et al. 2024, App. A: the UvA tutorial-6 encoder): input
  Dense(d) of the one-hot colours + sinusoidal positions, ``n_layers`` post-LayerNorm blocks
  (1 head, scaled dot-product softmax attention, FFN width 2d with ReLU), output head
  Dense(d) -> LN -> ReLU -> Dense(C).
  The masked site gets an extra (C+1)-th one-hot channel (``mask_token="channel"``) or a zero
  vector (``"zero"``). Xavier-uniform weights, zero biases, no dropout.

Interface: ``arch_spec(arch, L, C, ...)`` -> hashable ``ArchSpec``; ``init(spec, key)`` -> params;
``predict(spec, params, seqs, sites)`` -> ``(logits (B, C), attention rows (B, L))`` for one masked
site per sequence; ``predict_all_sites(spec, params, seqs)`` -> ``(logits (B, L, C), attention map
(L, L))`` with every site masked in turn. The attention row of a masked site ``i`` is the masked
token's attention over positions (factored: ``A_i``; transformers: the softmax row of layer 0, or
the mean of the last two layers when deeper); the map averages it over sequences.
``transformer_forward`` also returns every layer's full attention weights.
Computations run in the dtype of the parameters; ``seqs`` are integer colours ``(B, L)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from workflow_lib.core.config import schema_default
from workflow_lib.mlm.architectures import ARCHITECTURES, transformer_layers

Array = jax.Array
Params = dict[str, Any]

ARCHS = tuple(sorted((*ARCHITECTURES, "interpolated")))  # the model kinds arch_spec builds
LN_EPS = 1e-6  # flax.linen.LayerNorm default, as in the UvA notebook


@dataclass(frozen=True)
class ArchSpec:
    """Static description of a model; hashable, so it can be a ``jit`` static argument."""

    kind: str  # "factored" | "interpolated" | "transformer"
    L: int
    C: int
    softmax: bool = False  # factored: row-softmax attention over j != i
    a: float = 0.0  # interpolated: perturbation level in [0, 1]
    n_layers: int = 1  # transformer
    model_dim: int = schema_default("training.model_dim")  # transformer
    mask_token: str = schema_default("training.mask_token")  # transformer: "channel" | "zero"
    # factored family: A ~ N(0, s^2 / L), V ~ N(0, s^2 / C) with s = init_scale
    init_scale: float = schema_default("training.init_scale")


def arch_spec(arch: str, L: int, C: int, *, a: float | None = None,
              init_scale: float = ArchSpec.init_scale, model_dim: int = ArchSpec.model_dim,
              mask_token: str = ArchSpec.mask_token) -> ArchSpec:  # fmt: skip
    """The ``ArchSpec`` of ``arch`` (one of ``ARCHS``) on sequences of length ``L`` over ``C``
    colours: ``a``, the interpolated layer's perturbation level in ``[0, 1]`` (required for
    ``interpolated``, unused otherwise); ``init_scale``, the factored family's initialisation
    scale; ``model_dim`` and ``mask_token`` (``"channel"`` or ``"zero"``), a transformer's width
    and mask. The defaults are ``ArchSpec``'s, the schema's ``training`` defaults."""
    scale = float(init_scale)
    if arch in ("factored", "factored_softmax"):
        return ArchSpec("factored", L, C, softmax=arch == "factored_softmax", init_scale=scale)
    if arch == "interpolated":
        if a is None:
            raise ValueError("the interpolated layer needs its perturbation level a")
        a = float(a)
        if not 0.0 <= a <= 1.0:
            raise ValueError(f"perturbation level a={a} outside [0, 1]")
        return ArchSpec("interpolated", L, C, a=a, init_scale=scale)
    if arch in ("vanilla1", "vanilla3"):
        if mask_token not in ("channel", "zero"):
            raise ValueError(f"unknown mask_token {mask_token!r}; allowed: 'channel', 'zero'")
        n_layers = transformer_layers(arch)
        return ArchSpec("transformer", L, C, n_layers=n_layers, model_dim=int(model_dim),
                        mask_token=mask_token)
    raise ValueError(f"unknown architecture {arch!r}; allowed: {ARCHS}")


# ------------------------------------------------------------------------------------ helpers


def cross_entropy(logits: Array, targets: Array) -> Array:
    """Mean of ``-log softmax(logits)[target]``; ``logits: (..., C)``, int ``targets: (...)``."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    onehot = jax.nn.one_hot(targets, logits.shape[-1], dtype=logits.dtype)
    return -jnp.sum(logp * onehot) / math.prod(targets.shape)


def flatten_params(params: Params) -> dict[str, np.ndarray]:
    """Nested params -> ``{"layers/0/qkv/w": array, ...}`` (names joined with ``/``)."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(params)
    out = {}
    for path, leaf in leaves:
        names = [str(getattr(k, "key", getattr(k, "idx", k))) for k in path]
        out["/".join(names)] = np.asarray(leaf)
    return out


def _offdiag(L: int, dtype) -> Array:
    return 1.0 - jnp.eye(L, dtype=dtype)


def _normal(key: Array, shape: tuple[int, ...], std: float, dtype) -> Array:
    return std * jax.random.normal(key, shape, dtype)


# ---------------------------------------------------------------- factored / interpolated family


def _init_factored(spec: ArchSpec, key: Array, dtype) -> Params:
    L, C, s = spec.L, spec.C, spec.init_scale
    k_a, k_v, k_ac, k_vp = jax.random.split(key, 4)
    params = {
        "A": _normal(k_a, (L, L), s / math.sqrt(L), dtype) * _offdiag(L, dtype),
        "V": _normal(k_v, (C, C), s / math.sqrt(C), dtype),
    }
    if spec.kind == "interpolated":
        params["A_col"] = _normal(k_ac, (L, C), s / math.sqrt(L), dtype)
        params["V_pos"] = _normal(k_vp, (C, L), s / math.sqrt(C), dtype)
    return params


def attention_matrix(spec: ArchSpec, A: Array) -> Array:
    """Input-independent part of the masked token's attention, ``(L, L)`` with zero diagonal:
    ``A`` off the diagonal, or its row-softmax over ``j != i`` when ``spec.softmax``."""
    if spec.softmax:
        return jax.nn.softmax(jnp.where(jnp.eye(spec.L, dtype=bool), -jnp.inf, A), axis=-1)
    return A * _offdiag(spec.L, A.dtype)


def _factored_all_sites(spec: ArchSpec, params: Params, seqs: Array) -> tuple[Array, Array]:
    """Every site masked in turn: logits ``(B, L, C)`` and attention rows ``(B, L, L)``."""
    V = params["V"]
    values = V.T[seqs]  # (B, L, C): values[b, j] = V[:, s_bj], a gather (no one-hot product)
    w = attention_matrix(spec, params["A"])
    logits = jnp.einsum("ij,bjc->bic", w, values)
    if spec.kind == "factored":
        return logits, jnp.broadcast_to(w, (seqs.shape[0], *w.shape))
    a, V_pos = spec.a, params["V_pos"]
    G = jnp.swapaxes(params["A_col"].T[seqs], 1, 2) * _offdiag(spec.L, V.dtype)  # A_col[i, s_bj]
    corr = params["A"] @ V_pos.T + jnp.einsum("bij,bjc->bic", G, values + a * V_pos.T)
    return logits + a * corr, w + a * G


# ----------------------------------------------------------------------------- transformer


def _dense(key: Array, n_in: int, n_out: int, dtype) -> Params:
    limit = math.sqrt(6.0 / (n_in + n_out))  # Xavier uniform
    w = jax.random.uniform(key, (n_in, n_out), dtype, -limit, limit)
    return {"w": w, "b": jnp.zeros((n_out,), dtype)}


def _layer_norm_params(d: int, dtype) -> Params:
    return {"scale": jnp.ones((d,), dtype), "bias": jnp.zeros((d,), dtype)}


def _init_transformer(spec: ArchSpec, key: Array, dtype) -> Params:
    d, C = spec.model_dim, spec.C
    n_in = C + 1 if spec.mask_token == "channel" else C
    k_in, k_head, k_out, *k_layers = jax.random.split(key, 3 + spec.n_layers)
    layers = []
    for k in k_layers:
        k_qkv, k_o, k_f1, k_f2 = jax.random.split(k, 4)
        layers.append(
            {
                "qkv": _dense(k_qkv, d, 3 * d, dtype),
                "o": _dense(k_o, d, d, dtype),
                "ln1": _layer_norm_params(d, dtype),
                "ffn1": _dense(k_f1, d, 2 * d, dtype),
                "ffn2": _dense(k_f2, 2 * d, d, dtype),
                "ln2": _layer_norm_params(d, dtype),
            }
        )
    return {
        "embed": _dense(k_in, n_in, d, dtype),
        "layers": layers,
        "head": {
            "dense": _dense(k_head, d, d, dtype),
            "ln": _layer_norm_params(d, dtype),
            "out": _dense(k_out, d, C, dtype),
        },
    }


def sinusoidal_positions(L: int, d: int, dtype) -> Array:
    """``PE[pos, 2k] = sin(pos / 10000^(2k/d))``, ``PE[pos, 2k+1] = cos(...)``; ``(L, d)``."""
    pos = np.arange(L)[:, None]
    freq = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = np.zeros((L, d))
    pe[:, 0::2] = np.sin(pos * freq)
    pe[:, 1::2] = np.cos(pos * freq)[:, : d // 2]
    return jnp.asarray(pe, dtype)


def _apply_dense(p: Params, x: Array) -> Array:
    return x @ p["w"] + p["b"]


def _layer_norm(p: Params, x: Array) -> Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + LN_EPS) * p["scale"] + p["bias"]


def _encoder_block(p: Params, x: Array) -> tuple[Array, Array]:
    """Post-LN block on ``x: (B, L, d)``; returns the new ``x`` and attention ``(B, L, L)``."""
    q, k, v = jnp.split(_apply_dense(p["qkv"], x), 3, axis=-1)
    att = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]), axis=-1)
    x = _layer_norm(p["ln1"], x + _apply_dense(p["o"], att @ v))
    ffn = _apply_dense(p["ffn2"], jax.nn.relu(_apply_dense(p["ffn1"], x)))
    return _layer_norm(p["ln2"], x + ffn), att


def transformer_forward(
    spec: ArchSpec, params: Params, seqs: Array, sites: Array
) -> tuple[Array, Array]:
    """Encoder pass with site ``sites[b]`` of sequence ``b`` masked: logits at the masked sites
    ``(B, C)`` and the attention weights of every layer ``(n_layers, B, L, L)`` (query, key)."""
    B, L = seqs.shape
    masked = (jnp.arange(L) == sites[:, None]).astype(params["embed"]["w"].dtype)  # (B, L)
    x = _embed(spec, params, jax.nn.one_hot(seqs, spec.C, dtype=masked.dtype), masked)
    atts = []
    for layer in params["layers"]:
        x, att = _encoder_block(layer, x)
        atts.append(att)
    x_i = x[jnp.arange(B), sites]  # (B, d): only the masked token is read out
    return _head(params["head"], x_i), jnp.stack(atts)


def _embed(spec: ArchSpec, params: Params, colours: Array, masked: Array) -> Array:
    """Input stream ``(B, L, d)``: Dense(d) of the one-hot colours ``colours: (B, L, C)`` (the
    masked site's zeroed, plus the mask channel) + sinusoidal positions. ``masked: (B, L)``
    one-hot of the site."""
    dtype = params["embed"]["w"].dtype
    onehot = colours.astype(dtype) * (1 - masked[..., None])
    if spec.mask_token == "channel":
        onehot = jnp.concatenate([onehot, masked[..., None]], axis=-1)
    positions = sinusoidal_positions(colours.shape[1], spec.model_dim, dtype)
    return _apply_dense(params["embed"], onehot) + positions


def _head(head: Params, x_i: Array) -> Array:
    """Output head on the masked token ``x_i: (B, d)``: Dense(d) -> LN -> ReLU -> Dense(C)."""
    h = jax.nn.relu(_layer_norm(head["ln"], _apply_dense(head["dense"], x_i)))
    return _apply_dense(head["out"], h)


def transformer_predict_onehot(spec: ArchSpec, params: Params, colours: Array,
                               sites: Array) -> tuple[Array, Array]:  # fmt: skip
    """Logits ``(B, C)`` at the masked sites and the masked token's attention row ``(B, L)``
    (layer 0, or the mean of the last two) from one-hot colours ``colours: (B, L, C)``, so that
    the logits can be differentiated with respect to the inputs (``predict`` of one-hot rows).

    The same numbers as ``transformer_forward`` with less work: the last layer runs only the
    masked token's query (its keys and values still come from every token), and the masked
    token is selected by a one-hot contraction (no gather, so no scatter in the gradient).
    """
    dtype = params["embed"]["w"].dtype
    select = jax.nn.one_hot(sites, colours.shape[1], dtype=dtype)  # (B, L)
    x = _embed(spec, params, colours, select)
    *early, last = params["layers"]
    rows = []
    for layer in early:
        x, att = _encoder_block(layer, x)
        rows.append(jnp.einsum("bl,blk->bk", select, att))
    x_i = jnp.einsum("bl,bld->bd", select, x)  # (B, d): the masked token's stream
    d = spec.model_dim
    w, b = last["qkv"]["w"], last["qkv"]["b"]
    q = x_i @ w[:, :d] + b[:d]
    k, v = jnp.split(x @ w[:, d:] + b[d:], 2, axis=-1)  # (B, L, d) each
    att = jax.nn.softmax(jnp.einsum("bd,bld->bl", q, k) / math.sqrt(d), axis=-1)
    x_i = _layer_norm(last["ln1"], x_i + _apply_dense(last["o"], jnp.einsum("bl,bld->bd", att, v)))
    ffn = _apply_dense(last["ffn2"], jax.nn.relu(_apply_dense(last["ffn1"], x_i)))
    x_i = _layer_norm(last["ln2"], x_i + ffn)
    rows = [*rows[-1:], att]  # layer 0 alone, or the last two layers
    return _head(params["head"], x_i), jnp.mean(jnp.stack(rows), axis=0)


# ------------------------------------------------------------------------------- interface


def _transformer_predict(spec: ArchSpec, params: Params, seqs: Array, sites: Array):
    """``transformer_predict_onehot`` of integer colours ``seqs: (B, L)``."""
    colours = jax.nn.one_hot(seqs, spec.C, dtype=params["embed"]["w"].dtype)
    return transformer_predict_onehot(spec, params, colours, sites)


def init(spec: ArchSpec, key: Array, dtype=jnp.float32) -> Params:
    """Random initial parameters (see the module docstring for the laws)."""
    if spec.kind == "transformer":
        return _init_transformer(spec, key, dtype)
    return _init_factored(spec, key, dtype)


def predict(spec: ArchSpec, params: Params, seqs: Array, sites: Array) -> tuple[Array, Array]:
    """Mask site ``sites[b]`` of sequence ``b``: logits ``(B, C)`` and the masked token's attention
    row ``(B, L)``. ``seqs: (B, L)`` int, ``sites: (B,)`` int."""
    if spec.kind == "transformer":
        return _transformer_predict(spec, params, seqs, sites)
    logits, att = _factored_all_sites(spec, params, seqs)
    b = jnp.arange(seqs.shape[0])
    return logits[b, sites], att[b, sites]


def predict_all_sites(spec: ArchSpec, params: Params, seqs: Array) -> tuple[Array, Array]:
    """Mask every site in turn: logits ``(B, L, C)`` and the attention map ``(L, L)`` (row ``i``
    = the masked token's attention when ``i`` is masked, averaged over the ``B`` sequences)."""
    if spec.kind != "transformer":
        logits, att = _factored_all_sites(spec, params, seqs)
        return logits, jnp.mean(att, axis=0)
    B, L = seqs.shape

    def one_site(i: Array) -> tuple[Array, Array]:
        logits, rows = _transformer_predict(spec, params, seqs, jnp.full((B,), i))
        return logits, jnp.mean(rows, axis=0)

    logits, att = lax.map(one_site, jnp.arange(L))  # sequential over sites: bounded memory
    return jnp.swapaxes(logits, 0, 1), att
