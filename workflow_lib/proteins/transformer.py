"""Vanilla transformers of 1 and 3 layers (``workflow_lib.mlm.models``, Rende et al. 2024 App. A)
trained by masked language modelling on a weighted protein alignment.

Each step draws ``batch`` sequences with probabilities proportional to their weights (with
replacement: an unbiased estimate of the weighted loss) and masks one uniformly random site of
each; Adam with cosine decay (``workflow_lib.mlm.train.make_optimizer``). The whole run is one
``jit``-compiled ``lax.scan`` over steps in float32, with progress lines (loss, steps/s, ETA)
from the device every tenth of the run.
"""

from __future__ import annotations

import logging
import time

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
from workflow_lib.mlm.train import make_optimizer
from workflow_lib.proteins.alignment import Q

Array = jax.Array
log = logging.getLogger("workflow_lib.proteins")


class StepProgress:
    """Host-side progress lines of one run of ``steps`` steps, from the device through
    ``jax.debug.callback``: the step, its loss, the steps per second since the reporter was made
    (compilation included) and the time left."""

    def __init__(self, logger: logging.Logger, steps: int) -> None:
        self.logger, self.steps, self.start = logger, steps, time.perf_counter()

    def __call__(self, step: Array, loss: Array) -> None:
        step = int(step)
        rate = step / max(time.perf_counter() - self.start, 1e-9)
        self.logger.info("step %d/%d  loss %.4f  %.0f steps/s  ETA %.0f s", step, self.steps,
                         float(loss), rate, (self.steps - step) / max(rate, 1e-9))


def train_transformer(arch: str, cfg: dict, seqs: np.ndarray, weights: np.ndarray,
                      key: Array) -> tuple[ArchSpec, Params, np.ndarray]:  # fmt: skip
    """Train ``arch`` (``vanilla1`` or ``vanilla3``) on ``seqs: (M, L)`` with ``weights: (M,)``.

    ``cfg``: ``model_dim``, ``mask_token``, ``steps``, ``batch_size``, ``learning_rate``.
    Returns the spec, the trained float32 params and the training loss of every step
    ``(steps,)``.
    """
    L = seqs.shape[1]
    spec = arch_spec(arch, cfg, L, Q)
    steps, batch = int(cfg["steps"]), int(cfg["batch_size"])
    opt = make_optimizer("adam", float(cfg["learning_rate"]), steps)
    every = max(1, steps // 10)
    p = jnp.asarray(weights / np.sum(weights), jnp.float32)
    data = jnp.asarray(seqs, jnp.int32)
    progress = StepProgress(log, steps)

    @jax.jit
    def run(key: Array) -> tuple[Params, Array]:
        k_init, k_steps = jax.random.split(key)
        params = init(spec, k_init, jnp.float32)

        def loss_fn(params: Params, k: Array) -> Array:
            k_rows, k_sites = jax.random.split(k)
            rows = jax.random.choice(k_rows, data.shape[0], (batch,), p=p)
            sites = jax.random.randint(k_sites, (batch,), 0, L)
            x = data[rows]
            logits, _ = predict(spec, params, x, sites)
            return cross_entropy(logits, x[jnp.arange(batch), sites])

        def step(state, xs):
            params, opt_state = state
            i, k = xs
            loss, grad = jax.value_and_grad(loss_fn)(params, k)
            updates, opt_state = opt.update(grad, opt_state, params)
            lax.cond((i + 1) % every == 0,
                     lambda: jax.debug.callback(progress, i + 1, loss, ordered=True),
                     lambda: None)
            return (optax.apply_updates(params, updates), opt_state), loss

        keys = jax.random.split(k_steps, steps)
        (params, _), losses = lax.scan(step, (params, opt.init(params)),
                                       (jnp.arange(steps), keys))
        return params, losses

    params, losses = jax.device_get(run(key))
    return spec, params, np.asarray(losses, np.float64)


def evaluate_transformer(spec: ArchSpec, params: Params, seqs: np.ndarray,
                         chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Every site of ``seqs: (M, L)`` masked in turn: per-sequence loss ``(M,)`` (nats per site)
    and the attention map ``(L, L)`` averaged over the sequences, in chunks of ``chunk``
    sequences (bounded memory)."""

    @jax.jit
    def one(x: Array) -> tuple[Array, Array]:
        logits, att = predict_all_sites(spec, params, x)
        logp = jax.nn.log_softmax(logits, axis=-1)
        loss = -jnp.mean(jnp.take_along_axis(logp, x[..., None], axis=-1)[..., 0], axis=-1)
        return loss, att * x.shape[0]

    losses, att = [], 0.0
    for lo in range(0, len(seqs), chunk):
        loss, a = one(jnp.asarray(seqs[lo:lo + chunk], jnp.int32))
        losses.append(np.asarray(loss, np.float64))
        att = att + np.asarray(a, np.float64)
    return np.concatenate(losses), att / len(seqs)
