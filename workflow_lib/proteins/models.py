"""Pseudo-likelihood models of a protein family, fitted on weighted sequences.

Two coupling models share one objective, the weighted negative pseudo-log-likelihood (the MLM
loss with every site masked in turn, which is what training factored attention by masked language
modelling minimises: Rende et al. 2024, Sec. III; ``workflow_lib.mlm.plm``):

- ``factored``: ``J_ij(a, b) = sum_h A^h_ij V^h_ab`` with ``H`` heads (``H = 1`` is the paper's
  layer, Rende et al. 2024 eq. 4; AttentionDCA and mogwai use several), signed ``A^h`` or its
  row-softmax over ``j != i`` (``softmax``: ``workflow_lib.mlm.models.attention_matrix``), or
  mogwai's factored attention (``lowrank``, Bhattacharya et al. 2020): ``A^h`` the row-softmax
  over ``j != i`` of ``Q^h K^h^T / sqrt(r)`` (query and key ``(L, r)`` per head), ``V^h = W_V^h
  W_O^h`` of rank ``d_v``, and the couplings symmetrised, ``J_ij(a, b) = sum_h (A^h_ij V^h_ab +
  A^h_ji V^h_ba) / 2``; with optional fields ``h_i(a)``;
- ``plmdca``: free symmetric couplings, one ``J_ij(a, b) = J_ji(b, a)`` per pair ``i < j``,
  shared by the conditionals of ``i`` and ``j``, with fields (the symmetric plmDCA of Ekeberg et
  al. 2013, as pydca and plmc fit it).

The objective, for training sequences with weights ``w_m`` (``M_eff = sum_m w_m``), is the plmDCA
one divided by ``L``::

    (1 / L) [ -(1 / M_eff) sum_m w_m sum_i log P(s_mi | s_m,-i)
              + lambda_h ||h||^2 + lambda_J ||J||^2 ]

(``||J||^2`` over ``i != j``; for ``factored`` the coupling term is ``lambda_A (||A||^2 +
||V||^2)``, for ``lowrank`` GREMLIN's (and mogwai's) ``lambda_e (L - 1) (Q - 1) / (2 M_eff)
||J||^2`` on its couplings, ``lambda_e`` per sequence as in GREMLIN's unnormalised sum),
minimised by full-batch L-BFGS to a gradient criterion (``workflow_lib.mlm.lbfgs``).
plmDCA's conditionals go through one float32 matrix product of the one-hot sequences with the
couplings (``coupling_product``), its L-BFGS keeps ``PLMDCA_MEMORY`` correction pairs of its
``L (L - 1) Q^2 / 2`` parameters; factored attention's go through float32 contractions too,
through its heads or through its couplings, whichever runs faster (``site_logits``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.mlm.lbfgs import MEMORY, minimize
from workflow_lib.mlm.models import ArchSpec, attention_matrix
from workflow_lib.proteins.alignment import Q

Array = jax.Array
Params = dict[str, Array]
KINDS = ("factored", "plmdca")
ATTENTIONS = ("signed", "softmax", "lowrank")  # factored attention's forms
# L-BFGS correction pairs of the plmDCA fit: at L = 202 its L (L - 1) Q^2 / 2 = 9 million
# parameters make each pair cost about 0.1 s of vector work per iteration (one core), as much as
# the objective of a few hundred sequences (liblbfgs, pydca's optimiser, keeps 6 by default)
PLMDCA_MEMORY = 6


@dataclass(frozen=True)
class CouplingModel:
    """A coupling model of sequences of length ``L`` over ``Q`` states (hashable)."""

    kind: str  # "factored" | "plmdca"
    L: int
    heads: int = 1  # factored
    attention: str = "signed"  # factored: one of ATTENTIONS
    qk_rank: int = 16  # lowrank: rank r of each head's query and key
    value_rank: int = Q  # lowrank: rank d_v of each head's value-output map
    fields: bool = True
    # factored: A ~ N(0, s^2 / L), V ~ N(0, s^2 / Q); lowrank: query, key ~ N(0, s^2),
    # W_V ~ N(0, s^2 / Q), W_O ~ N(0, 1 / d_v)
    init_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown coupling model {self.kind!r}; allowed: {KINDS}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"unknown attention {self.attention!r}; allowed: {ATTENTIONS}")

    def n_params(self) -> int:
        """Free parameters (the masked diagonal of ``A`` and ``J`` not counted)."""
        L = self.L
        fields = L * Q if self.fields else 0
        if self.kind == "factored" and self.attention == "lowrank":
            return self.heads * (2 * L * self.qk_rank + 2 * Q * self.value_rank) + fields
        if self.kind == "factored":
            return self.heads * (L * (L - 1) + Q * Q) + fields
        return L * (L - 1) // 2 * Q * Q + fields


def init_params(model: CouplingModel, key: Array) -> Params:
    """Starting parameters: random ``A: (H, L, L)`` (zero diagonal) and ``V: (H, Q, Q)``; for
    ``lowrank`` random ``query, key: (H, L, r)``, ``value: (H, Q, d_v)`` (``W_V``) and ``output:
    (H, d_v, Q)`` (``W_O``); or zero couplings of the pairs ``i < j``, ``J: (L (L - 1) / 2, Q,
    Q)`` (``pair_couplings``); zero fields ``h: (L, Q)`` (scales: ``CouplingModel``)."""
    L, s = model.L, model.init_scale
    if model.kind == "factored" and model.attention == "lowrank":
        shapes = {"query": ((model.heads, L, model.qk_rank), s),
                  "key": ((model.heads, L, model.qk_rank), s),
                  "value": ((model.heads, Q, model.value_rank), s / math.sqrt(Q)),
                  "output": ((model.heads, model.value_rank, Q), 1 / math.sqrt(model.value_rank))}
        params = {name: scale * jax.random.normal(k, shape, jnp.float64)
                  for k, (name, (shape, scale)) in zip(jax.random.split(key, 4), shapes.items(),
                                                       strict=True)}
    elif model.kind == "factored":
        k_a, k_v = jax.random.split(key)
        A = s / math.sqrt(L) * jax.random.normal(k_a, (model.heads, L, L), jnp.float64)
        params = {"A": A * (1.0 - jnp.eye(L)),
                  "V": s / math.sqrt(Q) * jax.random.normal(k_v, (model.heads, Q, Q),
                                                            jnp.float64)}
    else:
        params = {"J": jnp.zeros((L * (L - 1) // 2, Q, Q), jnp.float64)}
    if model.fields:
        params["h"] = jnp.zeros((L, Q), jnp.float64)
    return params


def attention(model: CouplingModel, params: Params) -> Array:
    """The factored model's attention maps ``(H, L, L)``, zero diagonal: ``A`` (signed) or its
    row-softmax over ``j != i`` (softmax), or that of ``query^h key^h^T / sqrt(r)`` (lowrank)."""
    if model.attention == "lowrank":
        logits = jnp.einsum("hir,hjr->hij", params["query"], params["key"]) / math.sqrt(
            model.qk_rank)
    else:
        logits = params["A"]
    spec = ArchSpec("factored", model.L, Q, softmax=model.attention != "signed")
    return jax.vmap(lambda A: attention_matrix(spec, A))(logits)


def head_maps(model: CouplingModel, params: Params) -> tuple[Array, Array]:
    """The factored couplings as ``J = sum_k A^k V^k``: ``(A: (K, L, L), V: (K, Q, Q))``, the
    ``K = H`` heads (``attention``, ``V``); for ``lowrank`` the ``K = 2 H`` terms of its
    symmetrised couplings, ``A^h / 2`` with ``V^h = W_V^h W_O^h`` and ``A^h^T / 2`` with
    ``V^h^T``."""
    A = attention(model, params)
    if model.attention != "lowrank":
        return A, params["V"]
    V = params["value"] @ params["output"]
    return (0.5 * jnp.concatenate([A, A.transpose(0, 2, 1)]),
            jnp.concatenate([V, V.transpose(0, 2, 1)]))


def couplings(model: CouplingModel, params: Params) -> Array:
    """``J: (L, L, Q, Q)`` with a zero diagonal block: ``sum_k A^k_ij V^k_ab`` (``head_maps``) or
    the free symmetric couplings (``pair_couplings``)."""
    if model.kind == "factored":
        return jnp.einsum("hij,hab->ijab", *head_maps(model, params))
    return pair_couplings(params["J"], model.L)


def pair_couplings(T: Array, L: int) -> Array:
    """The symmetric couplings ``J: (L, L, Q, Q)`` of ``T: (L (L - 1) / 2, Q, Q)``, one block per
    pair ``i < j`` in ``np.triu_indices(L, 1)`` order: ``J[i, j] = T[p]``, ``J[j, i] = T[p]^T``,
    zero diagonal blocks, in ``T``'s dtype. The blocks are placed above the diagonal (a scatter of
    distinct, sorted blocks, whose reverse pass is a gather) and added to their transpose."""
    i, j = np.triu_indices(L, 1)
    upper = jnp.zeros((L, L, Q, Q), T.dtype).at[i, j].set(T, indices_are_sorted=True,
                                                          unique_indices=True)
    return upper + upper.transpose(1, 0, 3, 2)


def site_logits(model: CouplingModel, params: Params, seqs: Array) -> Array:
    """Logits of every site's conditional given the rest of ``seqs: (M, L)``: ``(M, L, Q)`` in
    the parameters' dtype, the contractions in float32 (as ``coupling_product``).

    Factored couplings are contracted through the values of each term of ``head_maps`` (``K M L
    (L + Q) Q`` multiply-adds, in the order ``jnp.einsum``'s path search picks) while ``2 K <
    Q``, else through ``J = sum_k A^k V^k`` in one matrix product (``M L^2 Q^2``,
    ``coupling_product``), whose single GEMM runs at about twice the per-head contractions' rate
    on CPUs (the factored rows of ``benchmarks/bench_proteins.py``); it also keeps no ``(M, L,
    K, Q)`` intermediate."""
    if model.kind == "factored":
        A, V = head_maps(model, params)
        dtype = V.dtype
        A, V = A.astype(jnp.float32), V.astype(jnp.float32)
        if 2 * A.shape[0] < Q:
            onehot = jax.nn.one_hot(seqs, Q, dtype=jnp.float32)
            logits = jnp.einsum("hij,hab,mjb->mia", A, V, onehot, optimize="optimal")
        else:
            logits = coupling_product(jnp.einsum("hij,hab->ijab", A, V), seqs)
    else:
        dtype = params["J"].dtype
        logits = coupling_product(pair_couplings(params["J"].astype(jnp.float32), model.L), seqs)
    logits = logits.astype(dtype)
    return logits + params["h"] if model.fields else logits


def coupling_product(J: Array, seqs: Array) -> Array:
    """``logits[m, i, a] = sum_j J[i, j, a, s_mj]`` of couplings ``J: (L, L, Q, Q)`` (zero
    diagonal blocks) and ``seqs: (M, L)``: ``(M, L, Q)`` in float32.

    One float32 matrix product, the one-hot sequences ``X: (M, L Q)`` times the couplings laid out
    as ``W: (L Q, L Q)``, ``W[(i, a), (j, b)] = J[i, j, a, b]``: ``X W^T``; the reverse pass, the
    couplings' gradient, is the one product ``G^T X`` of the logits' cotangent ``G: (M, L Q)``
    (``M (L Q)^2`` multiply-adds each; a gather of ``J[i, j, :, s_mj]`` does ``Q`` times fewer,
    but its reverse pass, a scatter-add, is no faster on CPUs). Each logit sums ``L`` float32
    terms (relative error about ``1e-7`` of their magnitudes); the softmax, the loss and the
    penalty stay in the parameters' dtype."""
    M, L = seqs.shape
    W = J.astype(jnp.float32).transpose(0, 2, 1, 3).reshape(L * Q, L * Q)
    X = jax.nn.one_hot(seqs, Q, dtype=jnp.float32).reshape(M, L * Q)
    return (X @ W.T).reshape(M, L, Q)


def site_losses(model: CouplingModel, params: Params, seqs: Array) -> Array:
    """``-log P(s_mi | s_m,-i)`` averaged over sites: ``(M,)`` nats per site."""
    logp = jax.nn.log_softmax(site_logits(model, params, seqs), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, seqs[..., None], axis=-1)[..., 0], axis=-1)


def weighted_mean(values, weights):
    """``sum(weights * values) / sum(weights)`` of two ``(M,)`` arrays (NumPy or JAX)."""
    return (weights * values).sum() / weights.sum()


def weighted_loss(model: CouplingModel, params: Params, seqs: Array, weights: Array) -> Array:
    """The weighted mean of ``site_losses`` (``weights: (M,)``, any positive scale)."""
    return weighted_mean(site_losses(model, params, seqs), weights)


@dataclass(frozen=True)
class Lambdas:
    """The penalty strengths of the objective (module docstring; config ``proteins.lambdas`` and
    ``proteins.lowrank.lambda``): ``couplings`` lambda_J (plmDCA), ``factored`` lambda_A (signed
    and softmax factored attention), ``fields`` lambda_h, ``lowrank`` lambda_e (GREMLIN's, of
    ``lowrank``; None for a fit of another form). A pytree of its numbers (``fit`` passes them to
    the compiled objective as float64 scalars, its data; a None is no leaf)."""

    couplings: float
    factored: float
    fields: float
    lowrank: float | None


jax.tree_util.register_dataclass(Lambdas, [f.name for f in dataclasses.fields(Lambdas)], [])


def penalty(model: CouplingModel, params: Params, lambdas: Lambdas,
            m_eff: float | Array) -> Array:  # fmt: skip
    """``(lambda_h ||h||^2 + lambda_J ||J||^2) / L`` (``||J||^2`` over ``i != j``: twice that of
    the pairs ``i < j``; ``factored``: ``lambda_A (||A||^2 + ||V||^2) / L``; ``lowrank``: GREMLIN's
    ``lambda_e (L - 1) (Q - 1) / (2 M_eff) ||J||^2 / L`` on its couplings, ``m_eff`` the fitted
    sequences' summed weight); ``lambdas``: the strengths (``Lambdas``; the model's form reads
    ``fields`` and the one of its coupling term)."""
    if model.kind == "factored" and model.attention == "lowrank":
        scale = lambdas.lowrank * (model.L - 1) * (Q - 1) / (2.0 * m_eff)
        total = scale * jnp.sum(couplings(model, params) ** 2)
    elif model.kind == "factored":
        total = lambdas.factored * (jnp.sum(params["A"] ** 2) + jnp.sum(params["V"] ** 2))
    else:
        total = 2.0 * lambdas.couplings * jnp.sum(params["J"] ** 2)
    if model.fields:
        total = total + lambdas.fields * jnp.sum(params["h"] ** 2)
    return total / model.L


@dataclass
class Fit:
    """Outcome of ``fit``: the kept ``params``, the objective at them, and L-BFGS figures of the
    kept start (``iterations``, ``grad_norm``, ``converged``, ``stop_reason``) with every
    start's final objective ``objectives: (starts,)`` and the wall time."""

    params: Params
    objective: float
    iterations: int
    grad_norm: float
    converged: bool
    stop_reason: str
    objectives: np.ndarray
    seconds: float


def fit(model: CouplingModel, seqs: np.ndarray, weights: np.ndarray, lambdas: Lambdas,
        key: Array, restarts: int, max_iter: int, grad_tol: float) -> Fit:  # fmt: skip
    """Minimise the weighted pseudo-likelihood objective (module docstring) with the penalty
    strengths ``lambdas`` on ``seqs: (M, L)`` with ``weights: (M,)`` by L-BFGS, at most
    ``max_iter`` iterations to the gradient criterion ``grad_tol``, from ``restarts`` random
    starts drawn from ``key`` (``plmdca``: one zero start, the problem is convex, and
    ``PLMDCA_MEMORY`` correction pairs); the converged start with the lowest objective is kept
    (the lowest of all when none converged)."""
    start = time.perf_counter()
    n_starts = restarts if model.kind == "factored" else 1
    starts = [init_params(model, k) for k in jax.random.split(key, n_starts)]
    data = (jnp.asarray(seqs, jnp.int32), jnp.asarray(weights, jnp.float64),
            jax.tree.map(jnp.float64, lambdas))
    memory = MEMORY if model.kind == "factored" else PLMDCA_MEMORY
    runs = minimize(_objective(model), starts, data, max_iter, grad_tol, memory=memory)
    ok = [r.converged(grad_tol) for r in runs]
    best = min(range(len(runs)), key=lambda k: (not ok[k], runs[k].fun))
    res = runs[best]
    return Fit(res.x, res.fun, res.nit, res.grad_norm,
               ok[best], res.message, np.array([r.fun for r in runs]),
               time.perf_counter() - start)


@cache
def _objective(model: CouplingModel) -> Callable[[Params, tuple], Array]:
    """The fitted objective of ``model`` (module docstring) as ``objective(params, (seqs,
    weights, lambdas))`` (one function per model, so its L-BFGS program compiles once per data
    shape)."""

    def objective(params: Params, data: tuple[Array, Array, Lambdas]) -> Array:
        seqs, weights, lambdas = data
        return (weighted_loss(model, params, seqs, weights)
                + penalty(model, params, lambdas, jnp.sum(weights)))

    return objective
