"""One model of the protein study fitted on the fitted rows of one split of a family: its contact
scores, its validation loss (on which the study chooses) and its held-out masked-token loss.

Model names: ``run_names.model_names``. Scores: APC-corrected Frobenius norms of
the couplings (``contacts.contact_scores``) for the coupling models, the APC-corrected
symmetrised attention map of the masked token (``contacts.attention_scores``) over
``eval_sequences`` training sequences for the transformers, and beside it their
categorical-Jacobian scores (``jacobian``) over ``jacobian_sequences`` of them.
Losses are in nats per site, every site masked in turn. The transformers train to their stop
criterion on the validation sequences (``transformer.train_transformer``) and keep the
parameters of their lowest validation loss. The hyperparameters of a fit: ``CouplingFit`` or
``TransformerFit``, which the stages build from their slice of the ``proteins`` config section.

A final fit (``fit_final``) fits one model on every sequence, without validation or held-out
ones: the configuration its split fits chose, a transformer for the steps at which they
stopped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.mlm.models import flatten_params
from workflow_lib.proteins import contacts, factored_form, models
from workflow_lib.proteins.jacobian import jacobian_scores, transformer_jacobian
from workflow_lib.proteins.run_names import TRANSFORMERS
from workflow_lib.proteins.transformer import (
    TransformerSettings,
    evaluate_transformer,
    train_transformer,
)

log = logging.getLogger("workflow_lib.proteins")


@dataclass(frozen=True)
class CouplingFit:
    """The hyperparameters of a coupling model's fit (config ``proteins``): ``fields``, whether
    it has fields ``h_i(a)``; ``lambdas``, the penalty strengths (``models.Lambdas``);
    ``restarts``, ``max_iter`` and ``grad_tol``, its L-BFGS fit's (``models.fit``); ``qk_rank``
    and ``value_rank``, the ranks of ``lowrank`` (``proteins.lowrank``; None for the other
    forms)."""

    fields: bool
    lambdas: models.Lambdas
    restarts: int
    max_iter: int
    grad_tol: float
    qk_rank: int | None
    value_rank: int | None


@dataclass(frozen=True)
class TransformerFit:
    """The hyperparameters of a transformer's fit (config ``proteins.transformer``):
    ``training``, its training (``transformer.TransformerSettings``); ``eval_sequences``, the
    training sequences that its attention map and training loss average (``evaluation_rows``);
    ``jacobian_sequences``, the first of those that its categorical Jacobian averages."""

    training: TransformerSettings
    eval_sequences: int
    jacobian_sequences: int


def coupling_model(name: str, L: int, *, fields: bool, qk_rank: int | None,
                   value_rank: int | None) -> models.CouplingModel:  # fmt: skip
    """The ``CouplingModel`` of run ``name`` (``factored[_softmax|_lowrank]-H<h>`` or
    ``plmdca``) of sequences of length ``L``, with fields ``h_i(a)`` when ``fields``; ``lowrank``
    with query and key rank ``qk_rank`` and value rank ``value_rank`` (which the other forms do
    not read)."""
    if name == "plmdca":
        return models.CouplingModel("plmdca", L, fields=fields)
    form = factored_form(name)
    if form is None:
        raise ValueError(f"unknown protein model {name!r}")
    attention, heads = form
    if attention != "lowrank":
        return models.CouplingModel("factored", L, heads=heads, attention=attention,
                                    fields=fields)
    if qk_rank is None or value_rank is None:
        raise ValueError(f"{name} needs its ranks (proteins.lowrank), got {qk_rank}, {value_rank}")
    return models.CouplingModel("factored", L, heads=heads, attention=attention, fields=fields,
                                qk_rank=qk_rank, value_rank=value_rank)


def evaluation_rows(M: int, n: int) -> np.ndarray:
    """The rows of ``M`` training sequences that a transformer's attention map and training loss
    average: ``n`` of them (``transformer.eval_sequences``; all when fewer) drawn by
    ``numpy.random.default_rng(0)``, sorted."""
    n = min(M, n)
    return np.sort(np.random.default_rng(0).permutation(M)[:n])


@dataclass
class ModelResult:
    """``scores: (L, L)`` contact scores; ``test_losses: (M_test,)`` nats per site of every
    held-out sequence; ``train_loss``, ``validation_loss``: the weighted losses of the fitted and
    the validation sequences (nats per site); ``params``: flat name -> array (plmDCA's ``J``:
    the couplings ``(L, L, Q, Q)``); ``metrics``: fit figures (iterations or steps, convergence,
    time); ``jacobian_scores: (L, L)``: a
    transformer's categorical-Jacobian contact scores (None for the coupling models, whose
    Jacobian is their couplings); ``curve``: a transformer's training curve, name -> ``(n,)``
    (``step``, ``train_loss``, ``validation_loss``; empty for the coupling models)."""

    scores: np.ndarray
    test_losses: np.ndarray
    train_loss: float
    validation_loss: float
    params: dict[str, np.ndarray]
    metrics: dict[str, float | int | bool | str]
    jacobian_scores: np.ndarray | None = None
    curve: dict[str, np.ndarray] = field(default_factory=dict)


def fit_model(name: str, settings: CouplingFit | TransformerFit,
              train: tuple[np.ndarray, np.ndarray], validation: tuple[np.ndarray, np.ndarray],
              test: np.ndarray, key: jax.Array) -> ModelResult:  # fmt: skip
    """Fit run ``name`` with the hyperparameters ``settings`` (a transformer's
    ``TransformerFit``, a coupling model's ``CouplingFit``) on ``train = (seqs (M, L), weights
    (M,))`` from ``key`` (its starts, or its initial parameters and steps), score it on
    ``validation = (seqs (M_val, L), weights (M_val,))`` (a transformer's stop criterion) and
    evaluate every sequence of ``test: (M_test, L)`` (none when ``M_test`` is 0: ``test_losses``
    empty)."""
    start = time.perf_counter()
    train_seqs, train_w = train
    if name in TRANSFORMERS:
        run = train_transformer(name, settings.training, train, validation, key)
        spec, params = run.spec, run.params
        test_losses = (evaluate_transformer(spec, params, test)[0] if len(test)
                       else np.zeros(0))
        rows = evaluation_rows(len(train_seqs), settings.eval_sequences)
        train_losses, att = evaluate_transformer(spec, params, train_seqs[rows])
        jacobian_start = time.perf_counter()
        jac = transformer_jacobian(spec, params, train_seqs[rows[:settings.jacobian_sequences]])
        return ModelResult(
            contacts.attention_scores(att), test_losses,
            float(models.weighted_mean(train_losses, train_w[rows])),
            float(run.validation_loss.min()),
            flatten_params(params) | {"attention_map": att},
            {"steps": int(run.step[-1]), "budget": run.budget, "best_step": run.best_step,
             "converged": run.stopped,
             "stop_reason": "stop criterion" if run.stopped else "step budget",
             "seconds": time.perf_counter() - start,
             "jacobian_seconds": time.perf_counter() - jacobian_start,
             "n_params": int(sum(np.size(x) for x in jax.tree_util.tree_leaves(params)))},
            jacobian_scores(jac),
            {"step": run.step, "train_loss": run.train_loss,
             "validation_loss": run.validation_loss},
        )
    model = coupling_model(name, train_seqs.shape[1], fields=settings.fields,
                           qk_rank=settings.qk_rank, value_rank=settings.value_rank)
    result = models.fit(model, train_seqs, train_w, settings.lambdas, key, settings.restarts,
                        settings.max_iter, settings.grad_tol)  # fmt: skip
    if not result.converged:
        log.warning("%s NOT CONVERGED: %s (max |gradient| %.1e > %.1e)", name, result.stop_reason,
                    result.grad_norm, settings.grad_tol)  # fmt: skip
    J = np.asarray(models.couplings(model, result.params), np.float64)
    losses = jax.jit(lambda p, x: models.site_losses(model, p, x))
    params = flatten_params(result.params)
    if model.kind == "factored":
        params["attention"] = np.asarray(models.attention(model, result.params))
    else:  # the couplings of every ordered pair, not only the fitted blocks of the pairs i < j
        params["J"] = J
    weighted = jax.jit(lambda p, x, w: models.weighted_loss(model, p, x, w))
    train_loss, validation_loss = (
        float(weighted(result.params, jnp.asarray(x, jnp.int32), jnp.asarray(w)))
        for x, w in (train, validation))
    return ModelResult(
        contacts.contact_scores(J),
        (np.asarray(losses(result.params, jnp.asarray(test, jnp.int32)), np.float64)
         if len(test) else np.zeros(0)),
        train_loss, validation_loss, params,
        {"objective": result.objective, "iterations": result.iterations,
         "grad_norm": result.grad_norm, "converged": result.converged,
         "stop_reason": result.stop_reason, "starts": len(result.objectives),
         "seconds": time.perf_counter() - start, "n_params": model.n_params()},
    )


def fit_final(name: str, settings: CouplingFit | TransformerFit,
              data: tuple[np.ndarray, np.ndarray], key: jax.Array,
              steps: int | None = None) -> ModelResult:  # fmt: skip
    """Fit run ``name`` with the hyperparameters ``settings`` (as ``fit_model``) on every
    sequence of ``data = (seqs (M, L), weights (M,))`` from ``key``, with no validation or
    held-out sequence: a coupling model as ``fit_model`` fits it; a transformer (``steps``
    required) for exactly ``steps`` Adam steps (``settings.training``'s ``steps``,
    ``eval_every`` and ``window`` replaced), in one compiled call with its one evaluation at the
    end (``eval_every = steps``, on the training sequences its attention map averages,
    ``evaluation_rows``), so that it keeps its last parameters. The result's ``validation_loss``
    is NaN and its ``test_losses`` empty; a transformer's ``converged`` says it ran its
    ``steps``."""
    seqs, weights = data
    validation = data
    if name in TRANSFORMERS:
        if steps is None or steps < 1:
            raise ValueError(f"the final fit of {name} needs its steps, got {steps}")
        settings = replace(settings, training=replace(
            settings.training, steps=int(steps), eval_every=int(steps), window=1))
        # evaluated once, at the end: its loss is reported
        rows = evaluation_rows(len(seqs), settings.eval_sequences)
        validation = (seqs[rows], weights[rows])
    res = fit_model(name, settings, data, validation, seqs[:0], key)
    metrics = dict(res.metrics)
    if name in TRANSFORMERS:
        metrics |= {"converged": metrics["steps"] == steps,
                    "stop_reason": f"{steps} steps, the split fits' stop"}
    return ModelResult(res.scores, res.test_losses, res.train_loss, float("nan"), res.params,
                       metrics, res.jacobian_scores, res.curve)
