"""Masked-language-model training of the models in ``models.py`` (Rende et al. 2024, eq. 3, Fig. 2).

Protocol:
- loss: cross-entropy of the masked colour. Transformers (``vanilla_sites: one``) mask one
  uniformly random site per sequence, redrawn at every step; with ``vanilla_sites: all`` an epoch
  visits every (sequence, site) pair once, in shuffled mini-batches of ``batch_size`` pairs
  (L times the steps per epoch): the same supervised sites per epoch as the factored family.
  The factored family (``factored``, ``factored_softmax``,
  ``interpolated``) masks every site of every sequence at once: its per-site predictions are
  independent, so this is the same expected loss with L times more signal per step at no extra
  cost; the loss is then the negative pseudo-log-likelihood per site (docs/design/training.md).
- optimiser ``sgd`` (plain, as in the paper) or ``adam``, learning rate with cosine decay to 0 over
  all steps, mini-batches of ``batch_size`` drawn without replacement each epoch (the remainder of
  ``M / batch_size`` is dropped), optional ``l2 * sum ||theta||^2`` on every parameter. The epoch's
  order sorts one 32-bit random key per sequence (``shuffle``).
- ``restarts`` random initialisations train side by side (``vmap`` for the factored family; one
  after the other inside the same program for transformers, ``over_restarts``: XLA:CPU runs
  their restart-batched layers ~1.8x slower than two plain passes); the one with the lowest final
  full training loss (all sites) is kept. The test set never enters the choice.
- convergence: the window criterion ``CONVERGENCE`` on the epoch-mean training loss; for the
  factored family with ``polish_max_iter > 0`` the kept solution is polished by full-batch L-BFGS
  in float64 on the same objective (``polish``) and converged means its gradient criterion
  (``POLISH_CONVERGENCE``). Every run records ``grad_norm``, the largest gradient entry of the
  training objective (all sites, full batch) at its final parameters.
- the whole run, including the optimal loss and the final ``c*`` fit, is one ``jit``-compiled
  program: a ``lax.scan`` over epochs (each a ``lax.scan`` over steps) with the evaluation inside;
  progress is logged from the device through ``jax.debug.callback``. Compilation dominates short
  runs, so the program keeps few random draws (each call site compiles to its own loop) and draws
  them with Philox (``PRNG_IMPL``, the key's data reinterpreted), the host only reads its outputs,
  and on CPU it compiles with ``CPU_COMPILER_OPTIONS``. Executables are cached per configuration
  and data shape, so repeated calls (seeds, realisations) compile once. Initialisation, training
  and metrics are traced with 32-bit defaults (``jax.enable_x64(False)``); the optimal loss and
  ``c*`` run in float64.

Per evaluated epoch (every ``eval_every`` epochs and the last) the history holds the mean training
mini-batch loss of the epoch, the test loss over all sites of the held-out sequences, and the
reconstruction error / Pearson r of the attention map against ``J`` (``metrics.reconstruction``).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.flatten_util import ravel_pytree

from workflow_lib.config import schema_defaults
from workflow_lib.mlm.lbfgs import minimize
from workflow_lib.mlm.metrics import (  # also importable from here
    CONVERGENCE,
    convergence,
    reconstruction,
    sq_norm,
)
from workflow_lib.mlm.models import (
    ArchSpec,
    Params,
    arch_spec,
    cross_entropy,
    flatten_params,
    init,
    predict,
    predict_all_sites,
)
from workflow_lib.potts.model import optimal_loss
from workflow_lib.sequences import in_training_set

Array = jax.Array
log = logging.getLogger("workflow_lib.mlm")


TRAIN_DEFAULTS = schema_defaults("training")
HISTORY_KEYS = ("train_loss", "test_loss", "test_loss_heldout", "recon_error", "pearson_r")
POLISH_CONVERGENCE = (
    "largest absolute gradient entry of the training objective (all sites of all training "
    "sequences, l2 included) below polish_grad_tol after the L-BFGS polish"
)
PRNG_IMPL = "philox4x32"  # the caller's threefry2x32 key reinterpreted: 3-4x cheaper to compile
# XLA:CPU defaults (new fusion emitters, LLVM -O3) compile this program 2x slower than the classic
# emitters at -O2, with no faster steps (benchmarks/bench_train.py).
CPU_COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 2}


class Plan(NamedTuple):
    """Static sizes of a run (hashable: a ``jit`` static argument)."""

    epochs: int
    steps: int  # per epoch
    all_sites: bool  # transformers: every (sequence, site) pair once per epoch
    batch: int
    restarts: int
    l2: float
    eval_every: int
    log_every: int


@dataclass
class TrainResult:
    """Outcome of ``train_mlm`` for the best restart.

    ``history``: ``epoch`` (1-based, evaluated epochs only) and ``HISTORY_KEYS``, each ``(n_eval,)``
    (``n_eval = epochs`` when ``eval_every = 1``; ``train_loss`` is the epoch's mean mini-batch
    loss, ``metrics["train_loss"]`` the final loss on all sites of all training sequences);
    ``optimal_loss``: exact-conditional loss on the
    test set (nats); ``attention``: ``(L, L)`` final attention map (scaled by ``c*`` for the
    factored family, raw masked-token softmax map for transformers); ``params``: flat name -> array;
    ``metrics``: final values (the last evaluation of the best restart) and timings;
    ``restarts``: every restart's final ``train_loss`` (all sites) and ``test_loss``, ``(R,)``
    (how many starts reach the best minimum).
    """

    history: dict[str, np.ndarray]
    optimal_loss: float
    attention: np.ndarray
    params: dict[str, np.ndarray]
    metrics: dict[str, float]
    restarts: dict[str, np.ndarray]


def mlm_loss(spec: ArchSpec, params: Params, seqs: Array, sites: Array | None) -> Array:
    """Mini-batch MLM loss: all sites (factored family, ``sites=None``) or the masked site
    ``sites: (B,)`` of each sequence (transformers)."""
    if spec.kind != "transformer":
        return cross_entropy(predict_all_sites(spec, params, seqs)[0], seqs)
    logits, _ = predict(spec, params, seqs, sites)
    return cross_entropy(logits, seqs[jnp.arange(seqs.shape[0]), sites])


def full_loss(spec: ArchSpec, params: Params, seqs: Array) -> Array:
    """MLM loss averaged over all sites of all sequences (the test loss, eq. 3)."""
    return cross_entropy(predict_all_sites(spec, params, seqs)[0], seqs)


def make_optimizer(name: str, learning_rate: float, total_steps: int):
    """``sgd`` or ``adam`` with cosine decay of the learning rate to 0 over ``total_steps``."""
    schedule = optax.cosine_decay_schedule(learning_rate, max(total_steps, 1))
    if name == "sgd":
        return optax.sgd(schedule)
    if name == "adam":
        return optax.adam(schedule)
    raise ValueError(f"unknown optimizer {name!r}; allowed: 'sgd', 'adam'")


def shuffle(key: Array, n: int) -> Array:
    """Random order of ``range(n)`` (int32) by sorting one 32-bit random key per element: one
    round of ``jax.random.permutation``, which runs two above ~1600 elements (twice the compile
    cost) to break ties; a tie (about ``n^2 / 2^33`` per draw) keeps its two elements in order."""
    return lax.sort_key_val(jax.random.bits(key, (n,)), jnp.arange(n, dtype=jnp.int32))[1]


def epoch_batches(spec: ArchSpec, plan: Plan, key: Array, n: int) -> tuple[Array, Array | None]:
    """One epoch's mini-batches of ``n`` sequences: indices ``(steps, batch)`` drawn without
    replacement and, for transformers, the masked site of each sequence (else ``None``): drawn
    at random, or with ``plan.all_sites`` every (sequence, site) pair once."""
    transformer = spec.kind == "transformer"
    if transformer and plan.all_sites:
        pairs = shuffle(key, n * spec.L)[: plan.steps * plan.batch].reshape(plan.steps, plan.batch)
        return pairs // spec.L, pairs % spec.L
    k_order, k_sites = jax.random.split(key) if transformer else (key, key)
    idx = shuffle(k_order, n)[: plan.steps * plan.batch].reshape(plan.steps, plan.batch)
    return idx, jax.random.randint(k_sites, idx.shape, 0, spec.L) if transformer else None


def _evaluate(spec: ArchSpec, params: Params, seqs: Array, heldout: Array, J: Array):
    """Test metrics (``HISTORY_KEYS[1:]``) and the attention map ``(L, L)`` of one model.

    ``heldout: (M_test,)`` float, 1 for test sequences absent from the training set: the
    held-out test loss averages only those (NaN when there are none).
    """
    logits, att = predict_all_sites(spec, params, seqs)
    logp = jax.nn.log_softmax(logits, axis=-1)
    per_seq = -jnp.mean(jnp.take_along_axis(logp, seqs[..., None], axis=-1)[..., 0], axis=-1)
    error, r, _ = reconstruction(att, J, gauge=spec.kind != "transformer")
    metrics = {
        "test_loss": jnp.mean(per_seq),
        "test_loss_heldout": jnp.sum(heldout * per_seq) / jnp.sum(heldout),
        "recon_error": error,
        "pearson_r": r,
    }
    return metrics, att


_CLOCK = {"epochs": 0, "steps": 0, "epoch": 0, "time": 0.0}  # host-side progress of the run


def _log_progress(e, m, optimum) -> None:
    """Host callback: progress line for the restart with the lowest training loss."""
    now, e, m = time.perf_counter(), int(e), jax.device_get(m)  # numpy: no device programs
    best = int(np.argmin(m["train_loss"]))
    rate = (e + 1 - _CLOCK["epoch"]) * _CLOCK["steps"] / max(now - _CLOCK["time"], 1e-9)
    _CLOCK.update(epoch=e + 1, time=now)
    log.info(
        "epoch %d/%d  train %.4f  test %.4f  (optimal %.4f)  %.0f steps/s",
        e + 1, _CLOCK["epochs"], m["train_loss"][best], m["test_loss"][best], optimum, rate,
    )  # fmt: skip


def over_restarts(spec: ArchSpec, f):
    """``f`` mapped over a leading restart axis of all its arguments: ``vmap`` for the factored
    family, a sequential ``lax.map`` for transformers (same numbers, faster on CPU)."""
    if spec.kind != "transformer":
        return jax.vmap(f)
    return lambda *args: lax.map(lambda a: f(*a), args)


def _train(spec, opt, plan, params, keys, train, test, heldout, J, optimum):
    """Train ``R`` restarts side by side. ``params``, ``keys``: leading restart axis ``R``.

    ``optimum`` is only logged. Returns the final params, the per-epoch metrics ``(epochs, R)``
    (NaN on epochs that are not evaluated) and the last evaluated attention maps ``(R, L, L)``.
    """
    evaluate = over_restarts(spec, lambda p: _evaluate(spec, p, test, heldout, J))

    def objective(p, seqs, sites):
        data = mlm_loss(spec, p, seqs, sites)
        return data + plan.l2 * sq_norm(p), data

    def epoch(state, key):  # one restart
        def step(state, xs):
            params, opt_state = state
            i, sites = xs
            (_, data), g = jax.value_and_grad(objective, has_aux=True)(params, train[i], sites)
            updates, opt_state = opt.update(g, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), data

        state, losses = lax.scan(step, state, epoch_batches(spec, plan, key, train.shape[0]))
        return state, jnp.mean(losses)

    def skip(params, att):
        return {k: jnp.full(plan.restarts, jnp.nan, att.dtype) for k in HISTORY_KEYS[1:]}, att

    def body(carry, e):
        state, att = carry
        epoch_keys = jax.vmap(jax.random.fold_in, (0, None))(keys, e)
        state, train_loss = over_restarts(spec, epoch)(state, epoch_keys)
        last = e + 1 == plan.epochs
        metrics, att = lax.cond(
            ((e + 1) % plan.eval_every == 0) | last,
            lambda p, _: evaluate(p),
            skip,
            state[0],
            att,
        )
        metrics = {"train_loss": train_loss, **metrics}
        lax.cond(
            ((e + 1) % plan.log_every == 0) | last,
            lambda: jax.debug.callback(_log_progress, e, metrics, optimum, ordered=True),
            lambda: None,
        )
        return (state, att), metrics

    state = (params, jax.vmap(opt.init)(params))
    att = jnp.zeros((plan.restarts, spec.L, spec.L), J.dtype)
    ((params, _), att), history = lax.scan(body, (state, att), jnp.arange(plan.epochs))
    return params, history, att


@partial(jax.jit, static_argnames=("spec", "opt", "plan"))
def _run(spec, opt, plan, key, train, test, heldout, J, U, beta):
    """The whole fit as one program. Returns the optimal loss, and per restart the final params,
    history, attention map, training loss (all sites, to choose the best restart) and the
    float64 ``reconstruction`` of the attention map."""
    optimum = optimal_loss(test, J, U, beta)
    with jax.enable_x64(False):
        key = jax.random.wrap_key_data(jax.random.key_data(key), impl=PRNG_IMPL)
        k_init, k_train = jax.random.split(key, (2, plan.restarts))
        params = jax.vmap(lambda k: init(spec, k))(k_init)
        J32 = J.astype(jnp.float32)
        logged = optimum.astype(jnp.float32)
        params, history, att = _train(
            spec, opt, plan, params, k_train, train, test, heldout.astype(jnp.float32), J32, logged
        )
        train_losses = jax.vmap(full_loss, (None, 0, None))(spec, params, train)
    gauge = spec.kind != "transformer"
    fits = jax.vmap(partial(reconstruction, gauge=gauge), (0, None))(att.astype(J.dtype), J)
    return optimum, params, history, att, train_losses, fits


def polish(spec: ArchSpec, params: Params, train: np.ndarray, l2: float, max_iter: int,
           grad_tol: float) -> tuple[Params, dict[str, float | int | bool | str]]:  # fmt: skip
    """L-BFGS polish, in float64, of one factored-family model from ``params`` (an Adam
    solution) on the objective Adam minimised: ``full_loss`` on all sites of ``train: (M, L)``
    plus ``l2 * sq_norm``, run until the largest gradient entry is below ``grad_tol``.

    Returns the polished params and ``polish_iterations``, ``polish_converged`` and
    ``polish_stop_reason`` (a ``max_iter`` or line-search stop is a failure to report).
    """
    x0, unravel = ravel_pytree(jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64),
                                                      params))  # fmt: skip

    def objective(x: Array, seqs: Array) -> Array:
        p = unravel(x)
        return full_loss(spec, p, seqs) + l2 * sq_norm(p)

    res = minimize(jax.jit(jax.value_and_grad(objective)), np.asarray(x0), jnp.asarray(train),
                   max_iter, grad_tol)  # fmt: skip
    return unravel(jnp.asarray(res.x)), {"polish_iterations": int(res.nit),
                                         "polish_converged": bool(res.grad_norm <= grad_tol),
                                         "polish_stop_reason": str(res.message)}


def grad_norm(spec: ArchSpec, params: Params, train: np.ndarray, l2: float) -> float:
    """Largest absolute gradient entry of the training objective (``full_loss`` on all sites of
    ``train: (M, L)`` plus ``l2 * sq_norm``) at ``params``: how far from a stationary point a
    run ended, whatever its optimiser."""
    grad = jax.jit(jax.grad(lambda p: full_loss(spec, p, jnp.asarray(train)) + l2 * sq_norm(p)))
    return float(max(jnp.max(jnp.abs(g)) for g in jax.tree_util.tree_leaves(grad(params))))


_EXECUTABLES: dict = {}  # the last few compiled runs, by static config and argument shapes


def _executable(spec: ArchSpec, cfg: dict, plan: Plan, args: tuple):
    """Compiled ``_run`` for this configuration, reused across calls with equal shapes."""
    sig = (spec, cfg["optimizer"], float(cfg["learning_rate"]), plan)
    sig += tuple((jnp.shape(x), jnp.result_type(x)) for x in args)
    if sig not in _EXECUTABLES:
        opt = make_optimizer(
            cfg["optimizer"], float(cfg["learning_rate"]), plan.epochs * plan.steps
        )
        while len(_EXECUTABLES) >= 8:
            _EXECUTABLES.pop(next(iter(_EXECUTABLES)))
        options = CPU_COMPILER_OPTIONS if jax.default_backend() == "cpu" else None
        _EXECUTABLES[sig] = _run.lower(spec, opt, plan, *args).compile(options)
    return _EXECUTABLES[sig]


def train_mlm(
    arch: str,
    cfg: dict,
    train_seqs: np.ndarray,
    test_seqs: np.ndarray,
    J: np.ndarray,
    U: np.ndarray,
    beta: float,
    key: Array,
) -> TrainResult:
    """Train ``arch`` (see ``models.ARCHS``) by MLM on ``train_seqs: (M, L)``; evaluate on
    ``test_seqs: (M_test, L)`` against the true model ``(J, U, beta)``.

    ``cfg``: the ``training`` config section; missing keys take the schema's defaults.
    """
    t_start = time.perf_counter()
    cfg = {**TRAIN_DEFAULTS, **cfg}
    train = np.asarray(train_seqs, np.int32)  # numpy in, numpy out: the run is one device program
    test = np.asarray(test_seqs, np.int32)
    (M, L), C = train.shape, int(np.asarray(U).shape[0])
    spec = arch_spec(arch, cfg, L, C)
    n_epochs = int(cfg["epochs"])
    all_sites = spec.kind == "transformer" and cfg["vanilla_sites"] == "all"
    units = M * L if all_sites else M  # supervised units per epoch: pairs or sequences
    batch = min(int(cfg["batch_size"]), units)
    steps = units // batch
    eval_every = int(cfg["eval_every"])
    if min(n_epochs, eval_every, int(cfg["restarts"])) < 1:
        raise ValueError("epochs, eval_every and restarts must be >= 1")
    log_every = eval_every * max(1, math.ceil(n_epochs / (10 * eval_every)))  # evaluated epochs
    plan = Plan(n_epochs, steps, all_sites, batch, int(cfg["restarts"]), float(cfg["l2"]),
                eval_every, log_every)  # fmt: skip
    J, U = np.asarray(J, np.float64), np.asarray(U, np.float64)
    in_train = in_training_set(train, test)
    args = (key, train, test, ~in_train, J, U, np.float64(beta))
    compiled = _executable(spec, cfg, plan, args)
    t_compiled = time.perf_counter()
    _CLOCK.update(epochs=n_epochs, steps=steps, epoch=0, time=t_compiled)
    out = jax.device_get(compiled(*args))  # numpy from here: no more device programs
    t_done = time.perf_counter()

    optimum, params, history, att, train_losses, fits = out
    best = int(np.argmin(train_losses))
    restarts = {"train_loss": np.asarray(train_losses, np.float64),
                "test_loss": np.asarray(history["test_loss"][-1], np.float64)}
    best_params = jax.tree_util.tree_map(lambda x: x[best], params)
    error, r, c = (float(x[best]) for x in fits)
    att = np.asarray(att[best], np.float64)
    history = {k: np.asarray(v[:, best], np.float64) for k, v in history.items()}
    evaluated = ~np.isnan(history["test_loss"])
    history = {k: v[evaluated] for k, v in history.items()}
    history["epoch"] = np.flatnonzero(evaluated) + 1
    final = {"train_loss": float(train_losses[best]),
             **{k: float(history[k][-1]) for k in ("test_loss", "test_loss_heldout")},
             "recon_error": error, "pearson_r": r, "attention_scale": c}
    conv = {**convergence(history["train_loss"], float(cfg["convergence_window"]),
                          float(cfg["convergence_tol"])),
            "convergence_tol": float(cfg["convergence_tol"]),
            "convergence_criterion": CONVERGENCE}  # fmt: skip
    polished = spec.kind != "transformer" and int(cfg["polish_max_iter"]) > 0
    if polished:
        best_params, report = polish(spec, best_params, train, plan.l2,
                                     int(cfg["polish_max_iter"]), float(cfg["polish_grad_tol"]))
        evaluation, att = _evaluate(spec, best_params, test, ~in_train, J)
        error, r, c = reconstruction(att, J, gauge=True)
        att = np.asarray(att, np.float64)
        adam = {f"adam_{k}": final[k] for k in ("train_loss", "test_loss")}
        final = {"train_loss": float(full_loss(spec, best_params, train)),
                 **{k: float(evaluation[k]) for k in ("test_loss", "test_loss_heldout")},
                 "recon_error": float(error), "pearson_r": float(r),
                 "attention_scale": float(c), **adam}  # fmt: skip
        conv |= {**report, "converged": report["polish_converged"],
                 "polish_grad_tol": float(cfg["polish_grad_tol"]),
                 "convergence_criterion": POLISH_CONVERGENCE}  # fmt: skip
    final["grad_norm"] = grad_norm(spec, best_params, train, plan.l2)
    if not conv["converged"]:
        log.warning("%s NOT CONVERGED: %s (relative improvement %.2e over the last %d epochs, "
                    "tolerance %.1e; max |gradient| %.1e)", arch,
                    conv.get("polish_stop_reason", "window criterion"), conv["rel_improvement"],
                    conv["convergence_epochs"], float(cfg["convergence_tol"]),
                    final["grad_norm"])  # fmt: skip
    attention = att if spec.kind == "transformer" else final["attention_scale"] * att
    metrics = {
        **final,
        "test_overlap": float(np.mean(in_train)),
        **conv,
        "best_restart": best,
        "steps": n_epochs * steps,  # optimiser steps; all restarts advance together
        "steps_per_second": n_epochs * steps / (t_done - t_compiled),
        "compile_seconds": t_compiled - t_start,
        "wall_seconds": time.perf_counter() - t_start,
    }
    return TrainResult(history, float(optimum), attention, flatten_params(best_params), metrics,
                       restarts)
