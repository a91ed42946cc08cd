"""The training loop of masked-language-model training as one ``jit``-compiled device program
(``run``): initialisation, a ``lax.scan`` over epochs (each a ``lax.scan`` over mini-batch
steps) for ``R`` restarts of each of ``K`` problems (realisations) side by side, the evaluation
inside, the optimal loss and the final ``c*`` fits. Progress goes to the host through
``jax.debug.callback``.

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
    """``f`` mapped over a leading restart axis of all its arguments: ``vmap``, but for
    transformers on the CPU a sequential ``lax.map`` (the same numbers within float32 rounding;
    XLA:CPU runs the restart-batched layers of a transformer slower than one pass per restart,
    ``benchmarks/bench_train.py``)."""
    if spec.kind != "transformer" or jax.default_backend() != "cpu":
        return jax.vmap(f)
    return lambda *args: lax.map(lambda a: f(*a), args)


def train_restarts(
    spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan, progress: Progress,
    params: Params, keys: Array, train: Array, test: Array, heldout: Array, J: Array,
    optimum: Array,
) -> tuple[Params, dict[str, Array], Array]:
    """Train ``R = plan.restarts`` restarts of each of ``K`` problems side by side: problem ``k``
    trains on ``train[k]: (M, L)`` and is evaluated on ``test[k]: (M_test, L)`` (``heldout[k]:
    (M_test,)``, ``J[k]: (L, L)``: ``evaluation.evaluate``). ``params``, ``keys``: leading axes
    ``(K, R)``; ``optimum: (K,)`` is only logged.

    Returns the final params, the per-epoch metrics ``HISTORY_KEYS``, each ``(epochs, K, R)``
    (NaN on epochs that are not evaluated), and the last evaluated attention maps ``(K, R, L, L)``.
    """
    K = train.shape[0]

    def evaluate_problem(p, test, heldout, J):  # one problem, its R restarts
        return over_restarts(spec, lambda q: evaluate(spec, q, test, heldout, J))(p)

    def objective(p, seqs, sites):
        data = mlm_loss(spec, p, seqs, sites)
        return data + plan.l2 * sq_norm(p), data

    def epoch(state, key, seqs):  # one restart of one problem
        def step(state, xs):
            params, opt_state = state
            i, sites = xs
            (_, data), g = jax.value_and_grad(objective, has_aux=True)(params, seqs[i], sites)
            updates, opt_state = opt.update(g, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), data

        state, losses = lax.scan(step, state, epoch_batches(spec, plan, key, seqs.shape[0]))
        return state, jnp.mean(losses)

    def problem_epoch(state, keys, seqs):  # one problem, its R restarts
        return over_restarts(spec, lambda s, k: epoch(s, k, seqs))(state, keys)

    def skip(params, att):
        return {k: jnp.full((K, plan.restarts), jnp.nan, att.dtype) for k in EVAL_KEYS}, att

    def body(carry, e):
        state, att = carry
        epoch_keys = jax.vmap(jax.vmap(jax.random.fold_in, (0, None)), (0, None))(keys, e)
        state, train_loss = jax.vmap(problem_epoch)(state, epoch_keys, train)
        last = e + 1 == plan.epochs
        metrics, att = lax.cond(
            ((e + 1) % plan.eval_every == 0) | last,
            lambda p, _: jax.vmap(evaluate_problem)(p, test, heldout, J),
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

    state = (params, jax.vmap(jax.vmap(opt.init))(params))
    att = jnp.zeros((K, plan.restarts, spec.L, spec.L), J.dtype)
    ((params, _), att), history = lax.scan(body, (state, att), jnp.arange(plan.epochs))
    return params, history, att


@partial(jax.jit, static_argnames=("spec", "opt", "plan", "progress"))
def run(spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan, progress: Progress,
        key: Array, train: Array, test: Array, heldout: Array, J: Array, U: Array,
        beta: Array) -> tuple:  # fmt: skip
    """``K`` fits as one program (``K`` problems of equal shapes: the realisations of a data set,
    trained side by side): for problem ``k``, ``R`` random initialisations from ``key[k]``,
    trained on ``train[k]: (M, L)`` and evaluated on ``test[k]: (M_test, L)`` against the true
    model ``(J[k], U[k], beta[k])``; ``heldout[k]: (M_test,)`` bool, test sequences absent from
    the training set. Problem ``k``'s numbers do not depend on the other problems but through
    float32 rounding (XLA may order a batched reduction differently), which Adam's normalised
    steps carry along: the factored family ends where it ends alone, a transformer's trajectory
    drifts (``train.train_many``).

    Returns the optimal test loss ``(K,)`` and, per problem and restart (leading axes ``(K,
    R)``), the final params, the attention map ``(K, R, L, L)``, the training loss on all sites
    ``(K, R)`` (to choose the best restart) and the float64 ``reconstruction`` of the map, three
    ``(K, R)`` arrays; the history is ``(epochs, K, R)`` (``train_restarts``).
    """
    optimum = jax.vmap(optimal_loss)(test, J, U, beta)
    with jax.enable_x64(False):
        key = jax.random.wrap_key_data(jax.random.key_data(key), impl=PRNG_IMPL)
        k_init, k_train = jnp.moveaxis(
            jax.vmap(lambda k: jax.random.split(k, (2, plan.restarts)))(key), 1, 0)
        params = jax.vmap(jax.vmap(lambda k: init(spec, k)))(k_init)
        J32 = J.astype(jnp.float32)
        logged = optimum.astype(jnp.float32)
        params, history, att = train_restarts(spec, opt, plan, progress, params, k_train, train,
                                              test, heldout.astype(jnp.float32), J32, logged)
        train_losses = jax.vmap(jax.vmap(full_loss, (None, 0, None)), (None, 0, 0))(
            spec, params, train)
    fit = jax.vmap(partial(reconstruction, gauge=spec.kind != "transformer"), (0, None))
    fits = jax.vmap(fit)(att.astype(J.dtype), J)
    return optimum, params, history, att, train_losses, fits
