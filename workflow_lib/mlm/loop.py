"""The training loop of masked-language-model training as one ``jit``-compiled device program
(``run``): initialisation, a ``lax.scan`` over epochs (each a ``lax.scan`` over mini-batch
steps) for ``R`` restarts side by side, the evaluation inside, the optimal loss and the final
``c*`` fits. Progress goes to the host through ``jax.debug.callback``.

Initialisation, training and metrics are traced with 32-bit defaults (``jax.enable_x64(False)``);
the optimal loss and ``c*`` run in float64. The program keeps few random draws (each call site
compiles to its own loop) and draws them with Philox (``PRNG_IMPL``, the caller's key data
reinterpreted), which compiles faster than the default; on CPU it compiles with
``CPU_COMPILER_OPTIONS`` (compile times: ``benchmarks/bench_train.py``, ``docs/performance.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import optax
from jax import lax

from workflow_lib.mlm.batching import epoch_batches
from workflow_lib.mlm.evaluation import EVAL_KEYS, evaluate
from workflow_lib.mlm.metrics import reconstruction, sq_norm
from workflow_lib.mlm.models import ArchSpec, Params, init
from workflow_lib.mlm.objective import full_loss, mlm_loss
from workflow_lib.mlm.plan import Plan
from workflow_lib.mlm.progress import Progress
from workflow_lib.potts.model import optimal_loss

Array = jax.Array

HISTORY_KEYS = ("train_loss", *EVAL_KEYS)
PRNG_IMPL = "philox4x32"  # the caller's threefry2x32 key reinterpreted: cheaper to compile
# XLA:CPU's defaults (new fusion emitters, LLVM -O3) compile this program slower than the classic
# emitters at -O2, with no faster steps (``benchmarks/bench_train.py``).
CPU_COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 2}


def compiler_options() -> dict[str, object] | None:
    """The options ``run`` compiles with on the default backend."""
    return CPU_COMPILER_OPTIONS if jax.default_backend() == "cpu" else None


def over_restarts(spec: ArchSpec, f: Callable) -> Callable:
    """``f`` mapped over a leading restart axis of all its arguments: ``vmap`` for the factored
    family, a sequential ``lax.map`` for transformers (same numbers; XLA:CPU runs the
    restart-batched layers of a transformer slower than one pass per restart)."""
    if spec.kind != "transformer":
        return jax.vmap(f)
    return lambda *args: lax.map(lambda a: f(*a), args)


def train_restarts(
    spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan, progress: Progress,
    params: Params, keys: Array, train: Array, test: Array, heldout: Array, J: Array,
    optimum: Array,
) -> tuple[Params, dict[str, Array], Array]:
    """Train ``R = plan.restarts`` restarts side by side on ``train: (M, L)``, evaluating on
    ``test: (M_test, L)`` (``heldout: (M_test,)``, ``J: (L, L)``: ``evaluation.evaluate``).
    ``params``, ``keys``: leading restart axis ``R``; ``optimum`` is only logged.

    Returns the final params, the per-epoch metrics ``HISTORY_KEYS``, each ``(epochs, R)`` (NaN
    on epochs that are not evaluated), and the last evaluated attention maps ``(R, L, L)``.
    """
    evaluate_all = over_restarts(spec, lambda p: evaluate(spec, p, test, heldout, J))

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
        return {k: jnp.full(plan.restarts, jnp.nan, att.dtype) for k in EVAL_KEYS}, att

    def body(carry, e):
        state, att = carry
        epoch_keys = jax.vmap(jax.random.fold_in, (0, None))(keys, e)
        state, train_loss = over_restarts(spec, epoch)(state, epoch_keys)
        last = e + 1 == plan.epochs
        metrics, att = lax.cond(
            ((e + 1) % plan.eval_every == 0) | last,
            lambda p, _: evaluate_all(p),
            skip,
            state[0],
            att,
        )
        metrics = {"train_loss": train_loss, **metrics}
        lax.cond(
            ((e + 1) % plan.log_every == 0) | last,
            lambda: jax.debug.callback(progress, e, metrics, optimum, ordered=True),
            lambda: None,
        )
        return (state, att), metrics

    state = (params, jax.vmap(opt.init)(params))
    att = jnp.zeros((plan.restarts, spec.L, spec.L), J.dtype)
    ((params, _), att), history = lax.scan(body, (state, att), jnp.arange(plan.epochs))
    return params, history, att


@partial(jax.jit, static_argnames=("spec", "opt", "plan", "progress"))
def run(spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan, progress: Progress,
        key: Array, train: Array, test: Array, heldout: Array, J: Array, U: Array,
        beta: Array) -> tuple:  # fmt: skip
    """The whole fit as one program: ``R`` random initialisations from ``key``, trained on
    ``train: (M, L)`` and evaluated on ``test: (M_test, L)`` against the true model ``(J, U,
    beta)``; ``heldout: (M_test,)`` bool, test sequences absent from the training set.

    Returns the optimal test loss and, per restart (leading axis ``R``), the final params, the
    history (``train_restarts``), the attention map ``(R, L, L)``, the training loss on all
    sites ``(R,)`` (to choose the best restart) and the float64 ``reconstruction`` of the map,
    three ``(R,)`` arrays.
    """
    optimum = optimal_loss(test, J, U, beta)
    with jax.enable_x64(False):
        key = jax.random.wrap_key_data(jax.random.key_data(key), impl=PRNG_IMPL)
        k_init, k_train = jax.random.split(key, (2, plan.restarts))
        params = jax.vmap(lambda k: init(spec, k))(k_init)
        J32 = J.astype(jnp.float32)
        logged = optimum.astype(jnp.float32)
        params, history, att = train_restarts(spec, opt, plan, progress, params, k_train, train,
                                              test, heldout.astype(jnp.float32), J32, logged)
        train_losses = jax.vmap(full_loss, (None, 0, None))(spec, params, train)
    gauge = spec.kind != "transformer"
    fits = jax.vmap(partial(reconstruction, gauge=gauge), (0, None))(att.astype(J.dtype), J)
    return optimum, params, history, att, train_losses, fits
