"""Pseudo-likelihood baselines (plmDCA-style; the equivalence: docs/design/training.md), fitted
full-batch by L-BFGS in float64.

Two coupling families, both without fields (the generative model has none), and three fits
(``PLM_KINDS``): ``factored`` and ``full`` below, and ``factored_from_truth``, the factored family
started at the generating parameters ``A = beta J, V = U``. Its test loss is the data set's own
floor: the training objective's minimum nearest the truth. On a finite, correlated data set that
minimum is not the truth (the fit moves wherever the sample's accidents lower the training loss),
so a fit from random starts is judged against this floor as well as against the optimal loss.

- ``factored``: ``J_ij(a, b) = A_ij V_ab`` — exactly the factored-attention MLM objective on all
  sites (``objective.full_loss``), penalised by ``l2 (||A||^2 + ||V||^2)`` (``l2_factored``).
  Non-convex: see the starts below.
- ``full``: unconstrained asymmetric couplings ``J: (L, L, C, C)``, ``J[i, j, a, b] = J_ij(a, b)``
  (diagonal blocks held at 0), conditional ``P(s_i = a | rest) ∝ exp(sum_{j != i} J_ij(a, s_j))``.
  As in plmDCA the penalty is per site on the per-sample averaged loss,
  ``mean_mu -log P(s_i^mu | .) + l2 sum_j ||J_ij||_F^2``, averaged here over sites:
  ``loss + (l2 / L) ||J||^2``. Convex; starts from 0. With couplings of order one, as here, the
  plmDCA default ``l2 = 0.01`` shrinks hard: on the L = C = 20, M = 3000, beta = 0.7 benchmark
  the test loss is 1.19 nats at l2 = 0.01, 0.92 at 1e-3, 0.99 at 1e-4 (optimum 0.67; factored:
  0.68), so the schema's default is 1e-3.

Convergence: L-BFGS (``lbfgs.minimize``, the starts in turn) runs until the
largest absolute gradient entry of the objective is below ``grad_tol``; a fit that stops
otherwise (``max_iter``, a line search with no decrease, or, where ``ftol > 0``, an objective
that fell by less than ``ftol`` over ``ftol_window`` iterations: the sample-complexity sweep's
option) is reported with ``converged = False`` and the optimiser's message, never silently.

Reducing ``full`` couplings to an ``(L, L)`` map (compared with ``J`` like an attention map): the
only gauge without fields is ``J_ij(a, b) -> J_ij(a, b) + f_ij(b)``, so centre over ``a``; the true
couplings ``beta J_ij (U_ab - mean_a U_ab)`` are then rank one as an ``(L^2, C^2)`` matrix. The map
is the leading left singular vector of the centred couplings in that shape (sign and scale are
fixed by the ``c*`` fit); ``rank1_fraction`` is the share of the squared Frobenius norm it carries.

Starts of the factored fit (``start``): ``random`` (best of ``restarts`` random inits) or
``spectral``: the rank-one factors (``rank1_factors``) of a converged ``full`` fit with ``l2_full``.
The full fit is convex, so the spectral start does not depend on luck. On the paper-scale data
(L = C = 20, M = 3000, one chain at mean Hamming distance 0.3) random starts end in minima with a
higher training loss; the spectral start lands in the minimum that the fit from the truth reaches
(docs/design/training.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.mlm.architectures import PLM_KINDS
from workflow_lib.mlm.lbfgs import minimize
from workflow_lib.mlm.metrics import reconstruction, sq_norm
from workflow_lib.mlm.models import (
    ArchSpec,
    Params,
    flatten_params,
    init,
    predict_all_sites,
)
from workflow_lib.potts.model import conditional_log_probs, optimal_loss
from workflow_lib.potts.sequences import in_training_set

Array = jax.Array


def family(kind: str) -> str:
    """The coupling family of a fit: ``"full"`` or ``"factored"``."""
    return "full" if kind == "full" else "factored"


@dataclass(frozen=True)
class PLMOptions:
    """The hyperparameters of a pseudo-likelihood fit (``fit_plm``), built by the caller (the
    ``plm`` stage from its config section: ``studies.potts_paper.stages_fits.plm_options``):

    - ``l2``: the penalty weight of the fitted family (the ``plm`` section's ``l2_factored`` or
      ``l2_full``; the sample-complexity sweep's effective l2);
    - ``max_iter``: L-BFGS iterations at most per start; ``grad_tol``: the convergence
      criterion, the largest absolute gradient entry at the solution;
    - ``ftol`` and ``ftol_window``: the relative-reduction stop of ``lbfgs.minimize`` (0: none;
      never applied to the full fit behind a spectral start);
    - ``start`` (factored: ``random``, ``spectral`` or ``spectral_and_random``), ``restarts``
      and ``init_scale`` (the random starts: ``A ~ N(0, s^2 / L)``, ``V ~ N(0, s^2 / C)``),
      ``l2_full`` (the l2 of the full fit behind a spectral start).
    """

    l2: float
    max_iter: int
    grad_tol: float
    ftol: float
    ftol_window: int
    start: str
    restarts: int
    init_scale: float
    l2_full: float


@dataclass
class PLMResult:
    """Outcome of ``fit_plm``: ``optimal_loss`` on the test set (nats), ``attention: (L, L)`` map
    after the ``c*`` fit, ``params`` (``A, V`` or ``J``), ``metrics`` (final losses, reconstruction,
    L-BFGS iterations, wall time)."""

    optimal_loss: float
    attention: np.ndarray
    params: dict[str, np.ndarray]
    metrics: dict[str, float]


def coupling_logits(J: Array, seqs: Array) -> Array:
    """``logits[m, i, a] = sum_{j != i} J[i, j, a, s_mj]``; ``J: (L, L, C, C)`` -> ``(M, L, C)``."""
    L, C = J.shape[0], J.shape[2]
    J = J * (1.0 - jnp.eye(L, dtype=J.dtype))[:, :, None, None]
    return jnp.einsum("ijab,mjb->mia", J, jax.nn.one_hot(seqs, C, dtype=J.dtype))


def rank1_factors(J: Array) -> tuple[Array, Array, Array]:
    """Best rank-one factorisation ``A_ij V_ab`` of gauge-centred couplings ``J: (L, L, C, C)``
    in the ``(L^2, C^2)`` shape: ``(A (L, L), V (C, C), rank1_fraction)``, the leading singular
    value split evenly between the two factors."""
    L, C = J.shape[0], J.shape[2]
    centred = (J - jnp.mean(J, axis=2, keepdims=True)).reshape(L * L, C * C)
    u, s, vt = jnp.linalg.svd(centred, full_matrices=False)
    root = jnp.sqrt(s[0])
    return (root * u[:, 0]).reshape(L, L), (root * vt[0]).reshape(C, C), s[0] ** 2 / jnp.sum(s**2)


def _logits(kind: str, spec: ArchSpec, params: Params, seqs: Array) -> Array:
    """Logits ``(M, L, C)`` of every site's conditional given the rest of ``seqs: (M, L)``."""
    return (predict_all_sites(spec, params, seqs)[0] if kind == "factored"
            else coupling_logits(params["J"], seqs))  # fmt: skip


def exact_map_error(spec: ArchSpec, params: Params, seqs: Array, J: Array, U: Array,
                    beta: float) -> float:
    """The largest absolute difference, over every site of ``seqs: (M, L)`` and colour, between
    the log conditionals of factored attention at ``params`` and the Potts model's at ``beta``
    (``J: (L, L)``, ``U: (C, C)``): zero up to rounding at ``A = beta J``, ``V = U`` (Rende et
    al. 2024, eqs. 4-5)."""
    model = jax.nn.log_softmax(_logits("factored", spec, params, seqs), axis=-1)
    return float(jnp.max(jnp.abs(model - conditional_log_probs(seqs, J, U, beta))))


def _data_loss(kind: str, spec: ArchSpec, params: Params, seqs: Array,
               weights: Array | None = None) -> Array:  # fmt: skip
    """Negative pseudo-log-likelihood per site (the MLM loss on all sites), averaged over
    ``seqs: (M, L)`` or, with ``weights: (M,)`` summing to one, their weighted mean."""
    logits = _logits(kind, spec, params, seqs)
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), seqs[..., None], axis=-1)
    per_seq = -jnp.mean(logp[..., 0], axis=-1)
    return jnp.mean(per_seq) if weights is None else jnp.sum(weights * per_seq)


_jitted_data_loss = jax.jit(_data_loss, static_argnums=(0, 1))  # compiled once per shape


def correct(kind: str, spec: ArchSpec, params: Params, seqs: Array) -> Array:
    """``(M, L)`` bool: the token of each (sequence, site) pair of ``seqs: (M, L)`` is the strict
    argmax of its conditional given the rest (a tie with another colour counts as wrong); all
    true when the fit classifies every masked site of ``seqs`` correctly."""
    logits = _logits(kind, spec, params, seqs)
    own = jax.nn.one_hot(seqs, logits.shape[-1], dtype=bool)
    true = jnp.sum(jnp.where(own, logits, 0.0), axis=-1)
    others = jnp.max(jnp.where(own, -jnp.inf, logits), axis=-1)
    return true > others


PENALTY_FORMS = ("mean", "sum")


def effective_l2(l2: float, penalty: str, n_seqs: int, L: int) -> float:
    """The l2 of ``fit_plm``'s objective (loss averaged over sequences and sites plus
    ``l2 ||theta||^2``) that has the minimisers of penalty form ``penalty`` on ``n_seqs``
    sequences of length ``L``: ``mean`` is that objective itself (``l2`` returned unchanged);
    ``sum`` is eq. (6) of Rende et al. 2024, the loss summed over sequences and sites plus
    ``l2 ||theta||^2``, which is ``n_seqs L`` times the averaged objective with
    ``l2 / (n_seqs L)``. The gradient criterion ``grad_tol`` stays on the averaged objective."""
    if penalty == "mean":
        return l2
    if penalty == "sum":
        return l2 / (n_seqs * L)
    raise ValueError(f"unknown penalty form {penalty!r}; allowed: {PENALTY_FORMS}")


# below about this many (row, i, j, colour) entries, a float64 value and gradient of the
# factored objective costs its fixed overhead on one CPU thread rather than its arithmetic, so
# smaller data sets are padded up to it and share one compiled fit
PAD_WORK = 2**16


def padded_length(n: int, min_rows: int = 1) -> int:
    """``max(n, min_rows)`` rounded up to keep its 4 leading binary digits (16 lengths per
    octave, at most 1/8 added): data sets of nearby sizes share one shape, so one compiled fit."""
    n = max(n, min_rows)
    step = 1 << max(n.bit_length() - 4, 0)
    return -(-n // step) * step


def distinct_with_weights(seqs: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``seqs: (M, L)`` over ``C`` colours and their frequencies, padded
    by copies of the first at weight 0 to ``padded_length(M_distinct, PAD_WORK / (L^2 C))``
    rows: ``(M_padded, L)`` and ``(M_padded,)``. The pseudo-likelihood is a sum over sequences,
    so a weighted sum over the distinct ones is the same objective (one chain in a glassy phase
    repeats its sequences: a value and gradient cost in proportion to the distinct ones), and
    the padding adds nothing to it but lets fits on data sets of nearby sizes (the sweep's M,
    realisations) share one compiled program."""
    distinct, counts = np.unique(seqs, axis=0, return_counts=True)
    L = seqs.shape[1]
    pad = padded_length(len(distinct), -(-PAD_WORK // (L * L * C))) - len(distinct)
    return (np.concatenate([distinct, np.repeat(distinct[:1], pad, axis=0)]),
            np.concatenate([counts / len(seqs), np.zeros(pad)]))


def _penalty(kind: str, spec: ArchSpec, l2: float | Array, params: Params) -> Array:
    if kind == "factored":
        return l2 * sq_norm(params)
    return l2 / spec.L * jnp.sum(params["J"] ** 2)


@cache
def _objective(fam: str, spec: ArchSpec) -> Callable[[Params, tuple[Array, Array, Array]], Array]:
    """The fitted objective of coupling family ``fam``, ``objective(params, (distinct, weights,
    l2))``: the weighted data loss plus the l2 penalty (one function per ``(fam, spec)``, so
    its L-BFGS program compiles once per data shape)."""

    def objective(params: Params, data: tuple[Array, Array, Array]) -> Array:
        seqs, weights, l2 = data
        return _data_loss(fam, spec, params, seqs, weights) + _penalty(fam, spec, l2, params)

    return objective


def fit_plm(
    kind: str,
    options: PLMOptions,
    train_seqs: np.ndarray,
    test_seqs: np.ndarray,
    J: np.ndarray,
    U: np.ndarray,
    beta: float,
    key: Array,
    starts: list[Params] | None = None,
    heldout: np.ndarray | None = None,
) -> PLMResult:
    """Maximum pseudo-likelihood fit of ``kind`` (one of ``PLM_KINDS``) with ``options``
    (``PLMOptions``) on ``train_seqs: (M, L)``, scored on ``test_seqs: (M_test, L)`` against the
    true model ``(J: (L, L), U: (C, C), beta)``; ``key``: the random starts'.

    ``starts``: initial parameters
    (e.g. Adam solutions to polish) instead of the kind's own starts (random, zero, or the
    truth). The best fit is the lowest objective among the
    converged ones (among all when none converged: ``metrics["converged"]`` is then False).
    The test loss is also reported on held-out sequences (``test_loss_heldout``, beside the
    optimal loss on them, ``optimal_loss_heldout``): ``heldout: (M_h, L)`` when given (e.g. the
    test sequences absent from a larger training set that ``train_seqs`` is the start of), else
    the test sequences absent from ``train_seqs`` (``test_overlap`` is the fraction present).
    ``train_accuracy`` and ``train_errors``: the fraction and the number of training (sequence,
    site) pairs whose token the fit predicts, and does not (``correct``).
    """
    if kind not in PLM_KINDS:
        raise ValueError(f"unknown PLM kind {kind!r}; allowed: {PLM_KINDS}")
    t_start = time.perf_counter()
    train = jnp.asarray(train_seqs, jnp.int32)
    test = jnp.asarray(test_seqs, jnp.int32)
    J64, U64 = jnp.asarray(J, jnp.float64), jnp.asarray(U, jnp.float64)
    L, C = J64.shape[0], U64.shape[0]
    spec = ArchSpec("factored", L, C, init_scale=float(options.init_scale))
    l2 = float(options.l2)

    given = starts is not None
    if given:  # e.g. an L-BFGS polish of Adam solutions
        starts = [jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), p) for p in starts]
    elif kind == "factored_from_truth":
        starts = [{"A": beta * J64, "V": U64}]
    elif kind == "factored":
        starts = []
        if options.start in ("spectral", "spectral_and_random"):
            full = fit_plm("full", replace(options, l2=options.l2_full, ftol=0.0), train_seqs,
                           test_seqs, J, U, beta, key)  # fmt: skip
            A0, V0, _ = rank1_factors(jnp.asarray(full.params["J"]))
            starts.append({"A": A0, "V": V0})
        if options.start in ("random", "spectral_and_random"):
            keys = jax.random.split(key, int(options.restarts))
            starts += [init(spec, k, jnp.float64) for k in keys]
    else:
        starts = [{"J": jnp.zeros((L, L, C, C), jnp.float64)}]

    fam = family(kind)
    grad_tol = float(options.grad_tol)
    distinct, weights = distinct_with_weights(np.asarray(train), C)
    data = (jnp.asarray(distinct), jnp.asarray(weights, jnp.float64), jnp.float64(l2))
    fits = minimize(_objective(fam, spec), starts, data, int(options.max_iter), grad_tol,
                    float(options.ftol), int(options.ftol_window))
    ok = [res.converged(grad_tol) for res in fits]
    best = min(range(len(fits)), key=lambda k: (not ok[k], fits[k].fun))
    res = fits[best]
    # converged starts that ended at the kept objective (relative 1e-4; distinct minima lie 1e-3
    # to 1e-1 apart at paper scale, the same one up to 5e-6 by tolerance): 1 of several means the
    # minimum was found once and a lower one may exist
    at_best = sum(o and f.fun <= res.fun + 1e-4 * abs(res.fun)
                  for o, f in zip(ok, fits, strict=True))
    params = res.x

    data_loss = partial(_jitted_data_loss, fam, spec)
    train_loss, test_loss = data_loss(params, train), data_loss(params, test)
    in_train = in_training_set(np.asarray(train), np.asarray(test))
    if heldout is None:
        heldout = np.asarray(test)[~in_train]
    held = jnp.asarray(heldout, jnp.int32)
    heldout_loss, heldout_optimum = ((data_loss(params, held), optimal_loss(held, J64, U64, beta))
                                     if len(held) else (np.nan, np.nan))
    right = np.asarray(correct(fam, spec, params, train))
    if fam == "factored":
        att, extra = params["A"], {}
    else:
        att, _, fraction = rank1_factors(params["J"])
        extra = {"rank1_fraction": float(fraction)}
    error, r, c = reconstruction(att, J64, gauge=True)  # zero diagonal; sign is a gauge
    if kind == "factored_from_truth":  # eqs. 4-5: the start is the Potts conditional itself
        extra["exact_map_error"] = exact_map_error(spec, starts[0], test, J64, U64, beta)
    metrics = {
        "train_loss": float(train_loss),
        "train_accuracy": float(right.mean()),
        "train_errors": int(right.size - right.sum()),
        "test_loss": float(test_loss),
        "test_loss_heldout": float(heldout_loss),
        "optimal_loss_heldout": float(heldout_optimum),
        "test_overlap": float(np.mean(in_train)),
        "objective": float(res.fun),
        "recon_error": float(error),
        "pearson_r": float(r),
        "attention_scale": float(c),
        **extra,
        "best_restart": best,
        "iterations": int(res.nit),
        "function_evals": int(res.nfev),
        "grad_norm": res.grad_norm,
        "grad_tol": grad_tol,
        "converged": bool(ok[best]),
        "restarts_converged": int(sum(ok)),
        "starts_at_best": int(at_best),
        "starts": len(fits),
        "stop_reason": res.message,
        "start": "given" if given else {"full": "zero", "factored_from_truth": "truth"}.get(
            kind, options.start),
        "wall_seconds": time.perf_counter() - t_start,
    }
    optimum = float(optimal_loss(test, J64, U64, beta))
    return PLMResult(optimum, np.asarray(c * att), flatten_params(params), metrics)
