"""The training loop of masked-language-model training as compiled device programs (``Run``):
initialisation with the optimal loss, then ``lax.scan`` over epochs (each a ``lax.scan`` over
mini-batch steps) for ``R`` restarts of each of ``K`` problems (realisations) side by side, the
evaluation inside, in chunks of the epochs between two progress lines, and the final ``c*`` fits.
The host writes the progress lines between the chunks: the programs hold no host callback, which
JAX's persistent compilation cache cannot keep (a callback's address is part of the program), so
a job finds them compiled by an earlier one.

Initialisation, training and metrics are traced with 32-bit defaults (``jax.enable_x64(False)``);
the optimal loss and ``c*`` run in float64. The programs keep few random draws (each call site
compiles to its own loop) and draw them with Philox (``PRNG_IMPL``, the caller's key data
reinterpreted), which compiles faster than the default; on CPU they compile with
``CPU_COMPILER_OPTIONS`` (compile times: ``benchmarks/bench_train.py``, ``docs/performance.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from workflow_lib.mlm.batching import epoch_batches
from workflow_lib.mlm.evaluation import EVAL_KEYS, evaluate
from workflow_lib.mlm.metrics import reconstruction, sq_norm, stopped
from workflow_lib.mlm.models import ArchSpec, Params, init
from workflow_lib.mlm.objective import full_loss, mlm_loss
from workflow_lib.mlm.plan import Plan
from workflow_lib.mlm.progress import Progress
from workflow_lib.potts.model import optimal_loss
from workflow_lib.runtime import checkpoints

Array = jax.Array

HISTORY_KEYS = ("train_loss", *EVAL_KEYS)
PRNG_IMPL = "philox4x32"  # the caller's threefry2x32 key reinterpreted: cheaper to compile
# XLA:CPU's defaults (new fusion emitters, LLVM -O3) compile these programs slower than the classic
# emitters at -O2, with no faster steps (``benchmarks/bench_train.py``).
CPU_COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 2}


def compiler_options() -> dict[str, object] | None:
    """The options ``Run``'s programs compile with on the default backend."""
    return CPU_COMPILER_OPTIONS if jax.default_backend() == "cpu" else None


def over_restarts(spec: ArchSpec, f: Callable) -> Callable:
    """``f`` mapped over a leading restart axis of all its arguments: ``vmap``, but for
    transformers on the CPU a sequential ``lax.map`` (the same numbers within float32 rounding;
    XLA:CPU runs the restart-batched layers of a transformer slower than one pass per restart,
    ``benchmarks/bench_train.py``)."""
    if spec.kind != "transformer" or jax.default_backend() != "cpu":
        return jax.vmap(f)
    return lambda *args: lax.map(lambda a: f(*a), args)


def train_epochs(
    spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan, carry: tuple, epochs: Array,
    keys: Array, train: Array, test: Array, heldout: Array, J: Array, active: Array | None = None,
    rates: Array | None = None,
) -> tuple[tuple, dict[str, Array]]:
    """The epochs ``epochs`` (0-based indices, ``(n,)``) of ``R = plan.restarts`` restarts of
    each of ``K`` problems side by side: problem ``k`` trains on ``train[k]: (M, L)`` and is
    evaluated on ``test[k]: (M_test, L)`` (``heldout[k]: (M_test,)``, ``J[k]: (L, L)``:
    ``evaluation.evaluate``) on the epochs ``plan`` evaluates. ``carry``: ``((params,
    opt_state), att)``, leading axes ``(K, R)``, ``att`` the last evaluated attention maps ``(K,
    R, L, L)``; ``keys: (K, R)``, the restarts' training keys. With a stop window
    (``plan.stop_window``) the carry also holds ``best``: the parameters and map of each
    restart's lowest held-out test loss so far (the test loss where no sequence is held out) and
    that loss ``(K, R)``, updated at every evaluation of a restart still ``active: (K, R)``, and
    each restart's steps are scaled by its learning-rate factor ``rates: (K, R)`` (``Stop``).

    Returns the carry after the last epoch and the per-epoch metrics ``HISTORY_KEYS``, each
    ``(n, K, R)`` (NaN on epochs that are not evaluated).
    """
    K = train.shape[0]

    def evaluate_problem(p, test, heldout, J):  # one problem, its R restarts
        return over_restarts(spec, lambda q: evaluate(spec, q, test, heldout, J))(p)

    def objective(p, seqs, sites):
        data = mlm_loss(spec, p, seqs, sites)
        return data + plan.l2 * sq_norm(p), data

    def epoch(state, key, seqs, rate):  # one restart of one problem
        def step(state, xs):
            params, opt_state = state
            i, sites = xs
            (_, data), g = jax.value_and_grad(objective, has_aux=True)(params, seqs[i], sites)
            updates, opt_state = opt.update(g, opt_state, params)
            if plan.stop_window:  # the restart's learning-rate factor
                updates = jax.tree_util.tree_map(lambda u: u * rate, updates)
            return (optax.apply_updates(params, updates), opt_state), data

        state, losses = lax.scan(step, state, epoch_batches(spec, plan, key, seqs.shape[0]))
        return state, jnp.mean(losses)

    def problem_epoch(state, keys, seqs, rates):  # one problem, its R restarts
        return over_restarts(spec, lambda s, k, r: epoch(s, k, seqs, r))(state, keys, rates)

    def skip(params, att):
        return {k: jnp.full((K, plan.restarts), jnp.nan, att.dtype) for k in EVAL_KEYS}, att

    def keep_best(best, params, att, metrics):
        best_params, best_att, best_loss = best
        loss = jnp.where(jnp.isnan(metrics["test_loss_heldout"]), metrics["test_loss"],
                         metrics["test_loss_heldout"])
        better = active & (loss < best_loss)  # NaN (not evaluated) is never better

        def pick(new, old):
            return jnp.where(better.reshape(better.shape + (1,) * (new.ndim - 2)), new, old)

        return (jax.tree_util.tree_map(pick, params, best_params), pick(att, best_att),
                pick(loss, best_loss))

    def body(carry, e):
        state, att, *best = carry
        epoch_keys = jax.vmap(jax.vmap(jax.random.fold_in, (0, None)), (0, None))(keys, e)
        state, train_loss = jax.vmap(problem_epoch)(
            state, epoch_keys, train, rates if plan.stop_window else jnp.ones(keys.shape))
        metrics, att = lax.cond(
            ((e + 1) % plan.eval_every == 0) | (e + 1 == plan.epochs),
            lambda p, _: jax.vmap(evaluate_problem)(p, test, heldout, J),
            skip,
            state[0],
            att,
        )
        best = [keep_best(best[0], state[0], att, metrics)] if plan.stop_window else []
        return (state, att, *best), {"train_loss": train_loss, **metrics}

    return lax.scan(body, carry, epochs)


def _begin(spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan, key: Array,
           test: Array, J: Array, U: Array, beta: Array) -> tuple:  # fmt: skip
    """The optimal test loss ``(K,)`` (float64), the first carry of ``train_epochs`` (float32;
    with a stop window, ``best`` starts at the initial parameters and an infinite loss) and the
    restarts' training keys ``(K, R)``."""
    optimum = jax.vmap(optimal_loss)(test, J, U, beta)
    with jax.enable_x64(False):
        key = jax.random.wrap_key_data(jax.random.key_data(key), impl=PRNG_IMPL)
        k_init, k_train = jnp.moveaxis(
            jax.vmap(lambda k: jax.random.split(k, (2, plan.restarts)))(key), 1, 0)
        params = jax.vmap(jax.vmap(lambda k: init(spec, k)))(k_init)
        state = (params, jax.vmap(jax.vmap(opt.init))(params))
        att = jnp.zeros((J.shape[0], plan.restarts, spec.L, spec.L), jnp.float32)
        best = [(params, att, jnp.full(att.shape[:2], jnp.inf, att.dtype))] if (
            plan.stop_window) else []
    return optimum, (state, att, *best), k_train


def _epochs(spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan, n: int, carry: tuple,
            first: Array, keys: Array, train: Array, test: Array, heldout: Array,
            J: Array, active: Array | None = None,
            rates: Array | None = None) -> tuple:  # fmt: skip
    """``n`` epochs from epoch ``first`` (``train_epochs``, float32)."""
    with jax.enable_x64(False):
        return train_epochs(spec, opt, plan, carry, first + jnp.arange(n, dtype=jnp.int32), keys,
                            train, test, heldout, J, active, rates)


def _finish(spec: ArchSpec, params: Params, att: Array, train: Array, J: Array) -> tuple:
    """The training loss on all sites ``(K, R)`` (float32) and the float64 ``reconstruction`` of
    the maps ``att: (K, R, L, L)``, three ``(K, R)`` arrays."""
    with jax.enable_x64(False):
        train_losses = jax.vmap(jax.vmap(full_loss, (None, 0, None)), (None, 0, 0))(
            spec, params, train)
    fit = jax.vmap(partial(reconstruction, gauge=spec.kind != "transformer"), (0, None))
    return train_losses, jax.vmap(fit)(att.astype(J.dtype), J)


def chunks(plan: Plan) -> list[int]:
    """The epochs of each compiled call of a run: ``plan.log_every`` at a time (a progress line
    after each), the remainder last."""
    full, rest = divmod(plan.epochs, plan.log_every)
    return [plan.log_every] * full + ([rest] if rest else [])


class Stop:
    """The stop criterion of a run with a stop window (``metrics.STOP``), read on the host at
    the end of each compiled chunk: each of the ``(K, R)`` restarts trains at a learning-rate
    factor (``rates``, from 1); when it meets the criterion a full window after its last change,
    the factor is multiplied by ``plan.stop_decay``, at most ``plan.stop_decays`` times, and at
    the next time the restart stops there (``active`` False, ``epochs`` its stop epoch, the cap
    for one that never met it; ``met``: whether it did). Without a window every restart trains
    every epoch at the schedule's rate."""

    def __init__(self, plan: Plan, shape: tuple[int, ...]) -> None:
        self.plan = plan
        self.active = np.ones(shape, bool)
        self.met = np.zeros(shape, bool)
        self.epochs = np.full(shape, plan.epochs, np.int64)
        self.rates = np.ones(shape, np.float32)
        self.decays = np.zeros(shape, np.int64)  # made so far
        self.since = np.zeros(shape, np.int64)  # the epoch of the last change of rate

    def state(self) -> tuple[np.ndarray, ...]:
        """What a checkpoint keeps of it (``restore``: the same order)."""
        return self.active, self.met, self.epochs, self.rates, self.decays, self.since

    def restore(self, state: tuple[np.ndarray, ...]) -> None:
        self.active, self.met, self.epochs, self.rates, self.decays, self.since = state

    def arguments(self) -> tuple[np.ndarray, ...]:
        """The chunk program's ``active`` and ``rates`` arguments, where it has them."""
        return (self.active, self.rates) if self.plan.stop_window else ()

    def update(self, done: int, history: dict[str, np.ndarray]) -> bool:
        """After ``done`` epochs (``history``: their metrics, ``(done, K, R)`` per key): the
        restarts that meet the criterion lower their rate, or stop there after their last
        decay; True when none trains on."""
        plan = self.plan
        if not plan.stop_window:
            return False
        loss = history["test_loss_heldout"]
        loss = np.where(np.isnan(loss), history["test_loss"], loss)
        evaluated = ~np.isnan(loss).all(axis=(1, 2))
        now = (stopped(np.flatnonzero(evaluated) + 1, loss[evaluated], plan.stop_window,
                       plan.stop_tol) & self.active & (done - self.since >= plan.stop_window))
        decay = now & (self.decays < plan.stop_decays)
        self.rates = np.where(decay, self.rates * np.float32(plan.stop_decay), self.rates)
        self.decays += decay
        self.since[decay] = done
        end = now & ~decay
        self.met |= end
        self.epochs[end] = done
        self.active &= ~end
        return not self.active.any()

    def mask(self, history: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``history`` (``(epochs run, K, R)`` per key) with NaN after each restart's stop."""
        after = np.arange(1, len(history["train_loss"]) + 1)[:, None, None] > self.epochs
        return {k: np.where(after, np.nan, v) for k, v in history.items()}


class Run:
    """``K`` fits as compiled programs (``K`` problems of equal shapes: the realisations of a
    data set, trained side by side), for one configuration and the shapes of ``args``, the
    arguments of ``__call__``. The epochs run in compiled chunks of ``plan.log_every``
    (``chunks``), a progress line to ``progress`` after each: the programs hold no host
    callback, so JAX's persistent compilation cache keeps them across processes.

    Problem ``k``'s numbers do not depend on the other problems but through float32 rounding
    (XLA may order a batched reduction differently), which Adam's normalised steps carry along:
    the factored family ends where it ends alone, a transformer's trajectory drifts
    (``train.train_many``).
    """

    def __init__(self, spec: ArchSpec, opt: optax.GradientTransformation, plan: Plan,
                 progress: Progress, args: tuple) -> None:  # fmt: skip
        self.plan, self.progress = plan, progress
        options = compiler_options()
        key, train, test, heldout, J, U, beta = args

        def compile(f: Callable, *example) -> jax.stages.Compiled:
            return jax.jit(f).lower(*example).compile(options)

        begin = partial(_begin, spec, opt, plan)
        self.begin = compile(begin, key, test, J, U, beta)
        _, carry, keys = jax.eval_shape(begin, key, test, J, U, beta)
        f32 = (jax.ShapeDtypeStruct(heldout.shape, jnp.float32),
               jax.ShapeDtypeStruct(J.shape, jnp.float32))
        # the restarts still training and their learning-rate factors: arguments only where a
        # stop window reads them
        active = ((jax.ShapeDtypeStruct(keys.shape, jnp.bool_),
                   jax.ShapeDtypeStruct(keys.shape, jnp.float32)) if plan.stop_window else ())
        self.epochs = {n: compile(partial(_epochs, spec, opt, plan, n), carry, np.int32(0), keys,
                                  train, test, *f32, *active)
                       for n in sorted(set(chunks(plan)))}
        kept = carry[2][:2] if plan.stop_window else (carry[0][0], carry[1])
        self.finish = compile(partial(_finish, spec), *kept, train, J)

    def __call__(self, key: Array, train: np.ndarray, test: np.ndarray, heldout: np.ndarray,
                 J: np.ndarray, U: np.ndarray, beta: np.ndarray) -> tuple:  # fmt: skip
        """Trains problem ``k``: ``R`` random initialisations from ``key[k]``, on ``train[k]:
        (M, L)``, evaluated on ``test[k]: (M_test, L)`` against the true model ``(J[k], U[k],
        beta[k])``; ``heldout[k]: (M_test,)`` bool, test sequences absent from the training set.

        Returns the optimal test loss ``(K,)`` and, per problem and restart (leading axes ``(K,
        R)``), the final params, the attention map ``(K, R, L, L)``, the training loss on all
        sites ``(K, R)`` (to choose the best restart) and the float64 ``reconstruction`` of the
        map, three ``(K, R)`` arrays; the history is ``(epochs run, K, R)`` (``train_epochs``;
        NaN after a restart's stop); last, the epoch each restart stopped at and whether it met
        the criterion there, two ``(K, R)`` arrays. With a
        stop window the params and map are those of each restart's lowest held-out loss
        (``Stop``), and the run ends when every restart has stopped."""
        optimum, carry, keys = self.begin(key, test, J, U, beta)
        logged = np.asarray(optimum, np.float32)
        train, test, heldout32, J32 = jax.device_put(
            (train, test, np.asarray(heldout, np.float32), np.asarray(J, np.float32)))
        plan = self.plan
        self.progress.start(plan.epochs, plan.steps)
        stop = Stop(plan, keys.shape)
        # float32 metrics per epoch, NaN until run: with the carry and the stop state, what a
        # checkpoint holds at a chunk's end (``workflow_lib.runtime.checkpoints``)
        history = {k: np.full((plan.epochs, *keys.shape), np.nan, np.float32)
                   for k in HISTORY_KEYS}
        ck = checkpoints.current()
        name = ck.unit("MLM training")
        done, (carry, history, stopping) = ck.resume(name, (carry, history, stop.state())) or (
            0, (carry, history, stop.state()))
        stop.restore(stopping)
        if done:
            self.progress.resumed(done)
        first = 0
        for n in chunks(plan):
            if first + n <= done:  # run before the checkpoint
                first += n
                continue
            carry, metrics = self.epochs[n](carry, np.int32(first), keys, train, test, heldout32,
                                            J32, *stop.arguments())
            for k, v in jax.device_get(metrics).items():
                history[k][first:first + n] = v
            first += n
            self.progress(first - 1, {k: v[first - 1] for k, v in history.items()}, logged)
            finished = stop.update(first, {k: v[:first] for k, v in history.items()})
            ck.boundary(name, first, plan.epochs, (carry, history, stop.state()))
            if finished:
                break
        history = {k: v[:first] for k, v in history.items()}
        params, att = carry[2][:2] if plan.stop_window else (carry[0][0], carry[1])
        train_losses, fits = self.finish(params, att, train, J)
        return (optimum, params, stop.mask(history), att, train_losses, fits,
                (stop.epochs, stop.met))
