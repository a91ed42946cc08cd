"""Masked-language-model training of the models in ``models.py`` (Rende et al. 2024, eq. 3, Fig. 2):
``train_mlm``, from the run's ``TrainingOptions`` to a ``TrainResult``; ``train_many``, several
problems of equal shapes (realisations) side by side in one program.

Protocol:
- loss (``objective``): cross-entropy of the masked colour. Transformers (``vanilla_sites: one``)
  mask one uniformly random site per sequence, redrawn at every step; with ``vanilla_sites: all``
  an epoch visits every (sequence, site) pair once, in shuffled mini-batches of ``batch_size``
  pairs (L times the steps per epoch): the same supervised sites per epoch as the factored
  family. The factored family (``factored``, ``factored_softmax``,
  ``interpolated``) masks every site of every sequence at once: its per-site predictions are
  independent, so this is the same expected loss with L times more signal per step at no extra
  cost; the loss is then the negative pseudo-log-likelihood per site (docs/design/training.md).
- optimiser ``sgd`` (plain, as in the paper) or ``adam``, learning rate with cosine decay to 0 over
  all steps (``make_optimizer``), mini-batches of ``batch_size`` drawn without replacement each
  epoch (``batching``; the remainder of ``M / batch_size`` is dropped, ``plan``), optional
  ``l2 * sum ||theta||^2`` on every parameter.
- ``restarts`` random initialisations train side by side (``loop.over_restarts``); the one with
  the lowest final full training loss (all sites) is kept. The test set never enters the choice.
- convergence: the window criterion ``metrics.CONVERGENCE`` on the epoch-mean training loss; for
  the factored family with ``polish_max_iter > 0`` the kept solution is polished by full-batch
  L-BFGS in float64 on the same objective (``polish``) and converged means its gradient
  criterion (``polish.POLISH_CONVERGENCE``). Every run records ``grad_norm``, the largest
  gradient entry of the training objective (all sites, full batch) at its final parameters, and
  the Adam solution's own metrics before any polish (``adam_*``): what MLM training reached.
- the whole run of every problem, including the optimal loss and the final ``c*`` fit, runs as
  compiled programs (``loop.Run``), compiled once per configuration and data shape in a
  ``CompiledRuns`` cache that callers may keep across calls; progress goes to its ``Progress``
  reporter.

Per evaluated epoch (every ``eval_every`` epochs and the last) the history holds the mean training
mini-batch loss of the epoch, the test loss over all sites of the held-out sequences, and the
reconstruction error / Pearson r of the attention map against ``J`` (``metrics.reconstruction``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np
import optax

from workflow_lib.mlm.compiled import CompiledRuns
from workflow_lib.mlm.evaluation import evaluate
from workflow_lib.mlm.loop import Run
from workflow_lib.mlm.metrics import CONVERGENCE, STOP, convergence, reconstruction
from workflow_lib.mlm.models import ArchSpec, Params, flatten_params
from workflow_lib.mlm.objective import full_loss
from workflow_lib.mlm.options import TrainingOptions
from workflow_lib.mlm.plan import Plan, make_plan
from workflow_lib.mlm.polish import POLISH_CONVERGENCE, grad_norm, polish
from workflow_lib.potts.model import optimal_loss
from workflow_lib.potts.sequences import in_training_set

log = logging.getLogger("workflow_lib.mlm")

ADAM_METRICS = ("train_loss", "test_loss", "test_loss_heldout", "recon_error", "pearson_r")
# recorded as adam_* before any polish: what MLM training by Adam itself reached


@dataclass
class TrainResult:
    """Outcome of ``train_mlm`` for the best restart.

    ``history``: ``epoch`` (1-based, evaluated epochs only) and ``loop.HISTORY_KEYS``, each
    ``(n_eval,)`` (``n_eval = epochs`` when ``eval_every = 1``; ``train_loss`` is the epoch's mean
    mini-batch loss, ``metrics["train_loss"]`` the final loss on all sites of all training
    sequences); ``optimal_loss``: exact-conditional loss on the
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


def make_optimizer(name: str, learning_rate: float, total_steps: int,
                   constant: bool = False) -> optax.GradientTransformation:  # fmt: skip
    """``sgd`` or ``adam`` with cosine decay of the learning rate to 0 over ``total_steps``, or
    (``constant``: a run with a stop window, whose plateaus lower it: ``loop.Stop``) at
    ``learning_rate`` throughout."""
    schedule = learning_rate if constant else optax.cosine_decay_schedule(
        learning_rate, max(total_steps, 1))
    if name == "sgd":
        return optax.sgd(schedule)
    if name == "adam":
        return optax.adam(schedule)
    raise ValueError(f"unknown optimizer {name!r}; allowed: 'sgd', 'adam'")


@dataclass(frozen=True)
class Problem:
    """One data set to fit by MLM: ``train: (M, L)`` and ``test: (M_test, L)`` sequences, the
    true model ``(J: (L, L), U: (C, C), beta)`` they were drawn from and the fit's ``key``."""

    train: np.ndarray
    test: np.ndarray
    J: np.ndarray
    U: np.ndarray
    beta: float
    key: jax.Array


def train_mlm(
    arch: str,
    options: TrainingOptions,
    train_seqs: np.ndarray,
    test_seqs: np.ndarray,
    J: np.ndarray,
    U: np.ndarray,
    beta: float,
    key: jax.Array,
    runs: CompiledRuns | None = None,
) -> TrainResult:
    """Train ``arch`` (see ``models.ARCHS``) with ``options`` by MLM on ``train_seqs: (M, L)``
    from the random ``key``; evaluate on ``test_seqs: (M_test, L)`` against the true model
    ``(J: (L, L), U: (C, C), beta)``: ``train_many`` of one problem (``options``, ``runs``: see
    there)."""
    return train_many(arch, options, [Problem(train_seqs, test_seqs, J, U, beta, key)], runs)[0]


def train_many(arch: str, options: TrainingOptions, problems: Sequence[Problem],
               runs: CompiledRuns | None = None) -> list[TrainResult]:  # fmt: skip
    """Train ``arch`` on each of ``problems`` (equal shapes: the realisations of one data-set
    protocol) side by side in the same compiled programs; the polish and the final metrics follow
    per problem. Each problem's result is the one it gets alone but for float32 rounding: for the
    factored family the same numbers to a few float32 units; a transformer's trajectory, which
    Adam's normalised steps make sensitive to rounding, drifts, so its final losses agree only
    roughly and another restart may win (what chunk sizes change: ``docs/usage.md``).

    ``options``: the run's hyperparameters (a ``TrainingOptions``, its ``a`` the interpolated
    layer's mixing). ``runs``: compiled programs to reuse and keep (pass the same one to calls
    with equal shapes; default: a new one, compiled for this call).
    """
    t_start = time.perf_counter()
    runs = runs if runs is not None else CompiledRuns()
    # numpy in, numpy out: the run is one device program
    train = np.stack([np.asarray(p.train, np.int32) for p in problems])
    test = np.stack([np.asarray(p.test, np.int32) for p in problems])
    (K, M, L), C = train.shape, int(np.asarray(problems[0].U).shape[0])
    spec = options.arch_spec(arch, L, C)
    plan = make_plan(spec, options, M)
    J = np.stack([np.asarray(p.J, np.float64) for p in problems])
    U = np.stack([np.asarray(p.U, np.float64) for p in problems])
    beta = np.array([p.beta for p in problems], np.float64)
    in_train = np.stack([in_training_set(a, b) for a, b in zip(train, test, strict=True)])
    keys = jax.random.wrap_key_data(np.stack([jax.random.key_data(p.key) for p in problems]))
    args = (keys, train, test, ~in_train, J, U, beta)
    name, lr = options.optimizer, float(options.learning_rate)

    def compile_run() -> Run:
        opt = make_optimizer(name, lr, plan.epochs * plan.steps, constant=bool(plan.stop_window))
        return Run(spec, opt, plan, runs.progress, args)

    compiled = runs.get((spec, name, lr, plan), args, compile_run)
    t_compiled = time.perf_counter()
    optimum, params, history, att, train_losses, fits, stops = jax.device_get(compiled(*args))
    t_done = time.perf_counter()
    # optimiser steps; all problems and restarts advance together until the last stops
    steps = len(history["train_loss"]) * plan.steps
    program = {"steps": steps, "steps_per_second": steps / (t_done - t_compiled),
               "compile_seconds": t_compiled - t_start, "realisations_per_program": K,
               "program_seconds": t_done - t_start}
    heldout_optimum = [float(optimal_loss(t[~m], j, u, b)) if (~m).any() else np.nan
                       for t, m, j, u, b in zip(test, in_train, J, U, beta, strict=True)]
    return [
        _result(arch, spec, plan, options, train[k], test[k], in_train[k], J[k],
                (float(optimum[k]), heldout_optimum[k]),
                jax.tree_util.tree_map(lambda x, k=k: x[k], params),
                {key: v[:, k] for key, v in history.items()}, att[k], train_losses[k],
                [x[k] for x in fits], [x[k] for x in stops], program)
        for k in range(K)
    ]


def _kept_evaluation(history: dict[str, np.ndarray], plan: Plan) -> int:
    """The index of the evaluation whose parameters a run keeps: its last, or with a stop window
    its lowest held-out test loss (the test loss where no sequence is held out), the first of
    equals, as ``loop.train_epochs`` keeps them."""
    if not plan.stop_window:
        return len(history["epoch"]) - 1
    loss = history["test_loss_heldout"]
    return int(np.argmin(np.where(np.isnan(loss), history["test_loss"], loss)))


def _result(arch: str, spec: ArchSpec, plan: Plan, options: TrainingOptions, train: np.ndarray,
            test: np.ndarray, in_train: np.ndarray, J: np.ndarray,
            optima: tuple[float, float],
            params: Params, history: dict[str, np.ndarray], att: np.ndarray,
            train_losses: np.ndarray, fits: list[np.ndarray], stops: list[np.ndarray],
            program: dict[str, float | int]) -> TrainResult:  # fmt: skip
    """One problem's ``TrainResult`` from its share of ``loop.Run``'s output (restart axis
    first; ``history`` values ``(epochs, R)``): the best restart by training loss, polished (the
    factored family), with its metrics (``adam_*``: those of the Adam solution before any
    polish); ``optima``: the optimal loss on the test set and on its held-out part;
    ``stops``: each restart's stop epoch and whether it met the stop criterion, ``(R,)`` each
    (``loop.Stop``; with a stop window the kept parameters are the lowest held-out loss's, its
    metrics the final ones, and converged means the criterion was met before the cap);
    ``program``: the shared program's sizes and timings."""
    t_start = time.perf_counter()
    optimum, heldout_optimum = optima
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
    kept = _kept_evaluation(history, plan)
    final = {"train_loss": float(train_losses[best]),
             **{k: float(history[k][kept]) for k in ("test_loss", "test_loss_heldout")},
             "recon_error": error, "pearson_r": r, "attention_scale": c}
    adam = {f"adam_{k}": final[k] for k in ADAM_METRICS}
    conv = {**convergence(history["train_loss"], float(options.convergence_window),
                          float(options.convergence_tol)),
            "convergence_tol": float(options.convergence_tol),
            "convergence_criterion": CONVERGENCE,
            "supervised_per_epoch": plan.supervised_per_epoch}  # fmt: skip
    if plan.stop_window:
        stop_epoch, met = (x[best] for x in stops)
        conv |= {"converged": bool(met), "stop_epoch": int(stop_epoch),
                 "stop_decays": plan.stop_decays,
                 "best_epoch": int(history["epoch"][kept]), "stop_window": plan.stop_window,
                 "stop_tol": plan.stop_tol, "epoch_cap": plan.epochs,
                 "convergence_criterion": STOP}  # fmt: skip
    polished = spec.kind != "transformer" and int(options.polish_max_iter) > 0
    if polished:
        best_params, report = polish(spec, best_params, train, plan.l2,
                                     int(options.polish_max_iter),
                                     float(options.polish_grad_tol))
        evaluation, att = evaluate(spec, best_params, test, ~in_train, J)
        error, r, c = reconstruction(att, J, gauge=True)
        att = np.asarray(att, np.float64)
        final = {"train_loss": float(full_loss(spec, best_params, train)),
                 **{k: float(evaluation[k]) for k in ("test_loss", "test_loss_heldout")},
                 "recon_error": float(error), "pearson_r": float(r),
                 "attention_scale": float(c)}  # fmt: skip
        conv |= {**report, "converged": report["polish_converged"],
                 "polish_grad_tol": float(options.polish_grad_tol),
                 "convergence_criterion": POLISH_CONVERGENCE}  # fmt: skip
    final["grad_norm"] = grad_norm(spec, best_params, train, plan.l2)
    if not conv["converged"]:
        log.warning("%s NOT CONVERGED: %s (relative improvement %.2e over the last %d epochs, "
                    "tolerance %.1e; max |gradient| %.1e)", arch,
                    conv.get("polish_stop_reason", "window criterion"), conv["rel_improvement"],
                    conv["convergence_epochs"], float(options.convergence_tol),
                    final["grad_norm"])  # fmt: skip
    attention = att if spec.kind == "transformer" else final["attention_scale"] * att
    metrics = {
        **final, **adam, "optimal_loss_heldout": heldout_optimum,
        "test_overlap": float(np.mean(in_train)),
        **conv,
        "best_restart": best,
        **program,
        # this problem's share of the program and its own polish
        "wall_seconds": program["program_seconds"] / program["realisations_per_program"]
        + time.perf_counter() - t_start,
    }
    return TrainResult(history, optimum, attention, flatten_params(best_params), metrics,
                       restarts)
