"""Gradient-descent training of the one-shot model (``attention.icl``) on fresh episodes.

The paper's recipe (its public code): square loss on ``y = ±1``, Adam with L2 weight decay, fresh
episodes whose query is another drawing of one context character, PyTorch-default initialisation.
On a small character set and a CPU budget that recipe sits on the symmetric plateau of in-context
learning (uniform attention, the output averages both context labels, loss 1). ``Recipe`` adds
two departures, both off in the paper's setting:

- ``identical_start``/``identical_end``: each training episode's query is the matching context
  image itself with probability p(s), linear in the step s from start to end (0, 0: the paper);
  the easy episodes break the plateau's symmetry, the others teach a metric that transfers.
- ``init``: ``pytorch`` (the paper) or ``lecun`` (LeCun-normal, sqrt(3) larger).

and an optional learning-rate schedule (linear warm-up over ``warmup_steps``, then constant or
cosine decay to 1 % of the rate), the paper's code's default being warm-up into cosine decay.
"""

from __future__ import annotations

import logging
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from workflow_lib.attention import icl
from workflow_lib.runtime import checkpoints
from workflow_lib.studies.omniglot.data import Embeddings, episode_draw, sequences

log = logging.getLogger("workflow_lib.attention")
PLATEAU_LOSS = 0.95  # a final block's training loss below this has left the plateau (1)
CHUNK_SECONDS = 5.0  # about this long per compiled call of training steps (``train``)
CHECKPOINT = "omniglot training"  # the loop's name in the job's checkpoint


class Recipe(NamedTuple):
    """The training settings (config ``omniglot.training``). The defaults of the optional fields
    are the paper's recipe (PyTorch initialisation, no identical queries, constant rate), not the
    config's: ``from_config`` fills them from the config."""

    steps: int
    batch: int
    learning_rate: float
    weight_decay: float
    log_every: int
    init: str = "pytorch"
    identical_start: float = 0.0
    identical_end: float = 0.0
    warmup_steps: int = 0
    cosine: bool = False

    @classmethod
    def from_config(cls, t: dict) -> Recipe:
        """From the ``omniglot.training`` config section (schema-validated, defaults filled)."""
        return cls(t["steps"], t["batch"], t["learning_rate"], t["weight_decay"],
                   min(t["log_every"], t["steps"]), t["init"], t["identical_query"]["start"],
                   t["identical_query"]["end"], t["warmup_steps"], t["cosine"])

    def identical(self, step: jax.Array) -> jax.Array:
        """p(step): the probability of an identical-query episode."""
        frac = step / max(self.steps - 1, 1)
        return self.identical_start + (self.identical_end - self.identical_start) * frac

    def schedule(self) -> optax.Schedule:
        """Learning rate against step: warm-up, then constant or cosine decay to 1 %."""
        decay = (optax.cosine_decay_schedule(self.learning_rate,
                                             max(self.steps - self.warmup_steps, 1), 0.01)
                 if self.cosine else optax.constant_schedule(self.learning_rate))
        if self.warmup_steps == 0:
            return decay
        warm = optax.linear_schedule(0.0, self.learning_rate, self.warmup_steps)
        return optax.join_schedules([warm, decay], [self.warmup_steps])


class Trained(NamedTuple):
    """``params``; per block of ``log_every`` steps: ``steps: (n_blocks,)`` steps done,
    ``loss: (n_blocks,)`` mean training loss, ``validation: (n_blocks,)`` accuracy on the
    held-out episodes (NaN without them); ``seconds`` of training."""

    params: icl.Params
    steps: np.ndarray
    loss: np.ndarray
    validation: np.ndarray
    seconds: float


def train(
    key: jax.Array, net: icl.Net, recipe: Recipe, tokens: jax.Array, starts: jax.Array,
    emb: Embeddings, held_out: tuple[jax.Array, jax.Array] | None = None,
) -> Trained:
    """Adam (L2 ``weight_decay``) on the square loss, ``recipe.batch`` fresh episodes per step
    from the bank ``tokens: (n, n_patches, N0)``/``starts`` (``data.Bank``); after each block
    the accuracy on ``held_out = (x0: (n, T, N0), y: (n,))``.

    The steps run in compiled calls of about ``CHUNK_SECONDS`` each (within a block), each a
    boundary of the job's checkpoint (``workflow_lib.runtime.checkpoints``, loop ``CHECKPOINT``):
    one program whatever the call's steps, the episodes of step ``s`` drawn from ``fold_in(key,
    s)``, so a resumed run gives the numbers of one never stopped."""
    k_init, k_data = jax.random.split(key)
    tokens, starts = jnp.asarray(tokens), jnp.asarray(starts)
    params = icl.init(k_init, net, recipe.init)
    opt = optax.chain(optax.add_decayed_weights(recipe.weight_decay),
                      optax.adam(recipe.schedule()))
    keep, every = icl.all_heads(net), recipe.log_every

    def loss(p, s):
        images, labels, y = episode_draw(jax.random.fold_in(k_data, s), starts,
                                                  recipe.batch, identical=recipe.identical(s))
        x0 = sequences(tokens, emb, images, labels)
        return jnp.mean(jnp.square(icl.forward(p, net, x0, keep) - y))

    @jax.jit
    def advance(carry, first, stop):
        """Steps ``first`` to ``stop - 1`` (traced) from ``carry = ((params, opt_state),
        block)``, ``block: (log_every,)`` the losses of the current block's steps."""

        def step(s, carry):
            (p, o), block = carry
            value, g = jax.value_and_grad(loss)(p, s)
            updates, o = opt.update(g, o, p)
            updates = jax.tree.map(lambda u, w: u.astype(w.dtype), updates, p)  # float32
            return (optax.apply_updates(p, updates), o), block.at[s % every].set(value)

        return lax.fori_loop(first, stop, step, carry)

    n_blocks = -(-recipe.steps // every)
    total = n_blocks * every
    block = jnp.zeros(every, jax.eval_shape(loss, params, np.int32(0)).dtype)
    state = {"carry": ((params, opt.init(params)), block), "loss": np.zeros(n_blocks),
             "validation": np.full(n_blocks, np.nan), "seconds": 0.0}
    ck = checkpoints.current()
    done, state = ck.resume(CHECKPOINT, state) or (0, state)
    carry, losses, validation = state["carry"], state["loss"], state["validation"]
    s, chunk, start = done, 1, time.perf_counter() - state["seconds"]
    while s < total:
        stop, t = min(s + chunk, (s // every + 1) * every), time.perf_counter()
        carry = jax.block_until_ready(advance(carry, np.int32(s), np.int32(stop)))
        chunk = checkpoints.chunk_steps(stop - s, time.perf_counter() - t, CHUNK_SECONDS)
        s = stop
        if s % every == 0:
            b = s // every - 1
            losses[b] = float(jnp.mean(carry[1]))
            if held_out is not None:
                validation[b] = icl.network_accuracy(carry[0][0], net, *held_out)
            elapsed = time.perf_counter() - start
            log.info(
                "step %d/%d  p_identical %.2f  train loss %.4f  held-out accuracy %.3f  "
                "%.1f steps/s  ETA %.0f s", s, total, float(recipe.identical(s - 1)), losses[b],
                validation[b], (s - done) / (elapsed - state["seconds"]),
                (elapsed - state["seconds"]) * (total - s) / (s - done),
            )  # fmt: skip
        ck.boundary(CHECKPOINT, s, total, {"carry": carry, "loss": losses.copy(),
                                           "validation": validation.copy(),
                                           "seconds": time.perf_counter() - start})
    steps = every * np.arange(1, n_blocks + 1)
    return Trained(carry[0][0], steps, losses, validation, time.perf_counter() - start)
