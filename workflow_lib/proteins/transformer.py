"""Vanilla transformers of 1 and 3 layers (``workflow_lib.mlm.models``, Rende et al. 2024 App. A)
trained by masked language modelling on a weighted protein alignment to a stop criterion.

Each step draws ``batch`` sequences with probabilities proportional to their weights (with
replacement: an unbiased estimate of the weighted loss) and masks one uniformly random site of each;
Adam at a constant learning rate (a plateau of the loss is then the model's, not a decayed
schedule's). Every ``eval_every`` steps the weighted masked-token loss of the validation sequences
is evaluated, every site masked in turn; the run stops when the lowest validation loss of the last
``window`` evaluations is not below ``(1 - tol)`` times the lowest before them (``plateaued``), or
at the budget of ``steps`` steps, and keeps the parameters of its lowest validation loss. The whole
run is one ``jit``-compiled ``lax.while_loop`` over evaluations, each a ``lax.scan`` over
``eval_every`` steps followed by the validation loss, in float32, with a progress line (losses,
steps/s, ETA to the budget) from the device at every evaluation, each a boundary of the job's
checkpoint (``workflow_lib.runtime.checkpoints``, loop ``CHECKPOINT``): the steps' keys derive from
the evaluation's index, so a resumed run gives the numbers of one never stopped. """

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from workflow_lib.mlm.models import (
    ArchSpec,
    Params,
    arch_spec,
    cross_entropy,
    init,
    predict,
    predict_all_sites,
)
from workflow_lib.proteins.alignment import Q
from workflow_lib.proteins.batches import padded_chunks
from workflow_lib.runtime import checkpoints

Array = jax.Array
log = logging.getLogger("workflow_lib.proteins")
VALIDATION_CHUNK = 256  # validation sequences evaluated at once (bounded memory)
CHECKPOINT = "transformer training"  # the loop's name in the job's checkpoint


class StepProgress:
    """Progress lines of one run with a budget of ``steps`` steps, written by the host after
    each compiled evaluation (its programs hold no host callback: JAX's persistent compilation
    cache keeps them across jobs): the step, the training and validation losses, the steps per
    second since the reporter was made at step ``done`` (compilation included) and the time left
    to the budget."""

    def __init__(self, logger: logging.Logger, steps: int, done: int = 0) -> None:
        self.logger, self.steps, self.done = logger, steps, done
        self.start = time.perf_counter()

    def __call__(self, step: Array, loss: Array, validation: Array) -> None:
        step = int(step)
        rate = (step - self.done) / max(time.perf_counter() - self.start, 1e-9)
        self.logger.info("step %d/%d  loss %.4f  validation %.4f  %.0f steps/s  ETA %.0f s", step,
                         self.steps, float(loss), float(validation), rate,
                         (self.steps - step) / max(rate, 1e-9))


@dataclass(frozen=True)
class Training:
    """A transformer's training: ``params``, those of the lowest validation loss; the curve, one
    entry per evaluation: ``step: (n,)`` the steps done, ``train_loss: (n,)`` the mean minibatch
    loss of the steps since the previous evaluation, ``validation_loss: (n,)`` the weighted
    validation loss (nats per site, every site masked in turn); ``best_step``, the step of the
    kept parameters; ``stopped``: the stop criterion ended the run, not the ``budget`` (the
    steps it allowed)."""

    spec: ArchSpec
    params: Params
    step: np.ndarray
    train_loss: np.ndarray
    validation_loss: np.ndarray
    best_step: int
    stopped: bool
    budget: int


def plateaued(losses: Array, n: Array, window: int, tol: float) -> Array:
    """The stop criterion on the first ``n`` validation losses of ``losses: (N,)`` (later
    entries ignored): more than ``window`` of them, and the lowest of the last ``window`` not
    below ``(1 - tol)`` times the lowest before them (no relative improvement of ``tol``)."""
    index = jnp.arange(losses.shape[0])
    before = jnp.min(jnp.where(index < n - window, losses, jnp.inf))
    recent = jnp.min(jnp.where((index >= n - window) & (index < n), losses, jnp.inf))
    return (n > window) & (recent > (1.0 - tol) * before)


def masked_site_losses(spec: ArchSpec, params: Params, x: Array) -> tuple[Array, Array]:
    """Every site of ``x: (B, L)`` masked in turn: the loss of each sequence ``(B,)`` (nats per
    site) and the attention map ``(L, L)`` averaged over the ``B`` sequences."""
    logits, att = predict_all_sites(spec, params, x)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, x[..., None], axis=-1)[..., 0], axis=-1), att


@dataclass(frozen=True)
class TransformerSettings:
    """The hyperparameters of a transformer's training (config ``proteins.transformer``):
    ``model_dim``, its width; ``mask_token``, how the masked site is marked (``channel`` or
    ``zero``: ``workflow_lib.mlm.models.ArchSpec``); ``steps``, the budget of Adam steps (rounded
    down to a multiple of ``eval_every``); ``batch_size``, the sequences of each step;
    ``learning_rate``, Adam's constant rate; ``eval_every``, the steps between validation
    losses; ``window`` and ``tol``, the stop criterion's (``plateaued``)."""

    model_dim: int
    mask_token: str
    steps: int
    batch_size: int
    learning_rate: float
    eval_every: int
    window: int
    tol: float


def train_transformer(arch: str, settings: TransformerSettings,
                      train: tuple[np.ndarray, np.ndarray],
                      validation: tuple[np.ndarray, np.ndarray], key: Array) -> Training:
    """Train ``arch`` (``vanilla1`` or ``vanilla3``) with the hyperparameters ``settings`` on
    ``train = (seqs (M, L), weights (M,))`` to the stop criterion on ``validation = (seqs
    (M_val, L), weights (M_val,))``, from ``key`` (its initial parameters and its steps' draws).
    """
    seqs, weights = train
    L = seqs.shape[1]
    spec = arch_spec(arch, L, Q, model_dim=settings.model_dim, mask_token=settings.mask_token)
    every, batch = settings.eval_every, settings.batch_size
    window, tol = settings.window, settings.tol
    evaluations = settings.steps // every
    if evaluations < 1:
        raise ValueError(f"transformer steps {settings.steps} below eval_every {every}")
    opt = optax.adam(settings.learning_rate)
    data = (jnp.asarray(seqs, jnp.int32), jnp.asarray(weights / np.sum(weights), jnp.float32),
            *padded_chunks(*validation, VALIDATION_CHUNK))

    def loss_fn(params: Params, k: Array, seqs: Array, p: Array) -> Array:
        k_rows, k_sites = jax.random.split(k)
        rows = jax.random.choice(k_rows, seqs.shape[0], (batch,), p=p)
        sites = jax.random.randint(k_sites, (batch,), 0, L)
        x = seqs[rows]
        logits, _ = predict(spec, params, x, sites)
        return cross_entropy(logits, x[jnp.arange(batch), sites])

    def validation_loss(params: Params, val_x: Array, val_w: Array) -> Array:
        sums = lax.map(lambda xw: jnp.sum(xw[1] * masked_site_losses(spec, params, xw[0])[0]),
                       (val_x, val_w))
        return jnp.sum(sums) / jnp.sum(val_w)

    @jax.jit
    def start(key: Array):
        k_init, k_steps = jax.random.split(key)
        params = init(spec, k_init, jnp.float32)
        nan = jnp.full(evaluations, jnp.nan, jnp.float32)
        return (jnp.int32(0), params, opt.init(params), params, jnp.float32(jnp.inf),
                (nan, nan), jnp.bool_(False), k_steps)

    @jax.jit
    def evaluation(state, seqs: Array, p: Array, val_x: Array, val_w: Array):
        """``every`` steps and a validation: one call, a progress line after it."""
        n, params, opt_state, best, best_loss, curve, _, k = state

        def step(state, k: Array):
            params, opt_state = state
            loss, grad = jax.value_and_grad(loss_fn)(params, k, seqs, p)
            updates, opt_state = opt.update(grad, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), loss

        (params, opt_state), losses = lax.scan(step, (params, opt_state),
                                               jax.random.split(jax.random.fold_in(k, n), every))
        val = validation_loss(params, val_x, val_w)
        curve = (curve[0].at[n].set(jnp.mean(losses)), curve[1].at[n].set(val))
        better = val < best_loss
        best = jax.tree_util.tree_map(lambda new, old: jnp.where(better, new, old), params, best)
        return (n + 1, params, opt_state, best, jnp.minimum(val, best_loss), curve,
                plateaued(curve[1], n + 1, window, tol), k)

    ck, first = checkpoints.current(), start(key)
    done, state = ck.resume(CHECKPOINT, first) or (0, first)
    progress = StepProgress(log, evaluations * every, done)
    while int(state[0]) < evaluations and not bool(state[6]):
        state = evaluation(state, *data)
        n = int(state[0])
        progress(n * every, state[5][0][n - 1], state[5][1][n - 1])
        ck.boundary(CHECKPOINT, n * every, evaluations * every, state)
    n, _, _, params, _, (train_curve, val_curve), stopped, _ = jax.device_get(state)
    n = int(n)
    steps = every * np.arange(1, n + 1)
    val_curve = np.asarray(val_curve[:n], np.float64)
    return Training(spec, params, steps, np.asarray(train_curve[:n], np.float64), val_curve,
                    int(steps[np.argmin(val_curve)]), bool(stopped), evaluations * every)


@functools.partial(jax.jit, static_argnums=0)
def _weighted_losses(spec: ArchSpec, params: Params, x: Array, w: Array) -> tuple[Array, Array]:
    """Every site of each row of ``x: (B, L)`` masked in turn: the rows' losses ``(B,)`` and
    their attention maps summed with weights ``w: (B,)`` (0 for a padding row), ``(L, L)``; the
    parameters are arguments, so that one program serves every chunk, fit and job of a shape."""
    loss, att = jax.vmap(lambda s: masked_site_losses(spec, params, s[None]))(x)
    return loss[:, 0], jnp.einsum("b,bij->ij", w.astype(att.dtype), att)


def evaluate_transformer(spec: ArchSpec, params: Params, seqs: np.ndarray,
                         chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Every site of ``seqs: (M, L)`` masked in turn: per-sequence loss ``(M,)`` (nats per site)
    and the attention map ``(L, L)`` averaged over the sequences, in chunks of ``chunk``
    sequences (bounded memory; the last padded with weight 0)."""
    x, w = padded_chunks(seqs, np.ones(len(seqs)), chunk)
    losses, att = [], 0.0
    for xc, wc in zip(x, w, strict=True):
        loss, a = _weighted_losses(spec, params, xc, wc)
        losses.append(np.asarray(loss, np.float64))
        att = att + np.asarray(a, np.float64)
    return np.concatenate(losses)[:len(seqs)], att / len(seqs)
