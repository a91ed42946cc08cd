"""Full-batch L-BFGS to a gradient criterion, every start in one compiled program: the
pseudo-likelihood fits (``plm.py``, ``workflow_lib.proteins.models``) and the polish of the
factored family's Adam solution (``polish.polish``).

The iteration is optax's L-BFGS (``memory`` correction pairs, ``MEMORY`` unless told) with its zoom
line search (strong Wolfe conditions, first trial step 1) inside a ``lax.while_loop``; the starts
run one after another in the same program (``lax.scan``: each stops at its own iteration count,
where ``vmap`` would run all to the slowest one's). The only regular stop is the gradient criterion,
the largest absolute gradient entry below ``grad_tol``; the others leave it above and say why
(``STOPS``): ``max_iter`` iterations; with ``ftol > 0``, a start that cannot win (``FLAT``): its
objective fell by less than ``ftol`` (relative) over the last ``ftol_window`` iterations (looked at
every ``ftol_window`` iterations: it creeps along a flat valley) and, falling on at that rate until
``max_iter``, it would still end above the lowest objective of an earlier start that met the
criterion (so no start is dropped before one has converged, and the lowest converged objective stays
the lowest unless a dropped start's descent would have sped up by the ratio of that gap to its
projected fall); or a line search that found no decrease (or a non-finite objective) twice in a row,
the second time from the steepest-descent step of an emptied memory, as in L-BFGS-B (the last point
with a decrease is kept, as at a float64 precision limit near a minimum).

``objective`` is a ``jit`` static argument, so a function that is the same object on every call
(a module-level function, or one made by a ``functools.cache``d factory) compiles once per data
shape; ``max_iter``, ``grad_tol``, ``ftol``, ``ftol_window`` and whatever else ``data`` holds (an
l2, say) are traced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import io_callback

Array = jax.Array
log = logging.getLogger("workflow_lib.mlm")

MEMORY = 20  # correction pairs kept (default)
# The clock, the only host round trip, is read at each of the first REPORT_EVERY iterations and
# every REPORT_EVERY-th after (a slow fit's first line comes after REPORT_SECONDS, not after
# REPORT_EVERY iterations)
REPORT_EVERY = 10
REPORT_SECONDS = 30.0  # at least this long between two progress lines of one start
RUNNING, CONVERGED, MAX_ITER, NO_DECREASE, NOT_FINITE, FLAT = range(6)
STOPS = {
    CONVERGED: "CONVERGENCE: max |gradient| <= grad_tol",
    MAX_ITER: "STOP: ITERATIONS REACHED max_iter",
    FLAT: "STOP: FLAT (RELATIVE REDUCTION OVER ftol_window <= ftol) ABOVE A CONVERGED START",
    NO_DECREASE: "ABNORMAL: LINE SEARCH FOUND NO DECREASE",
    NOT_FINITE: "ABNORMAL: NON-FINITE OBJECTIVE OR GRADIENT",
}


@dataclass(frozen=True)
class Result:
    """One start's outcome: the final parameters ``x`` (the start's pytree, JAX arrays), the
    objective ``fun`` and largest absolute gradient entry ``grad_norm`` there, iterations
    ``nit``, objective evaluations ``nfev`` and the stop's ``message`` (``STOPS``)."""

    x: object
    fun: float
    grad_norm: float
    nit: int
    nfev: int
    message: str

    def converged(self, grad_tol: float) -> bool:
        return self.grad_norm <= grad_tol


def max_abs(tree) -> Array:
    """The largest absolute entry of the arrays of ``tree``: a scalar, traceable."""
    return jnp.max(jnp.stack([jnp.max(jnp.abs(leaf)) for leaf in jax.tree_util.tree_leaves(tree)]))


def _value_and_grad(state: tuple) -> tuple[Array, object]:
    """The objective and its gradient at the current point, which the state of
    ``optax.lbfgs`` (a chain whose last link is its line search) carries: the line search
    leaves them there, ``_fresh`` puts them there."""
    return state[-1].value, state[-1].grad


def _fresh(opt: optax.GradientTransformationExtraArgs, x, value: Array, grad) -> tuple:
    """An L-BFGS state at ``x`` with an empty memory (its next step is steepest descent) that
    carries the objective ``value`` and its ``grad`` there."""
    state = opt.init(x)
    return (*state[:-1], state[-1]._replace(value=value, grad=grad))


def _now(_: Array) -> np.ndarray:
    """Wall-clock time, epoch seconds (a host callback; its argument ties it to a start)."""
    return np.float64(time.time())


def _report(start: Array, iteration: Array, value: Array, grad_norm: Array, max_iter: Array,
            since: Array, last: Array) -> np.ndarray:  # fmt: skip
    """A host callback: one progress line for ``start`` if ``REPORT_SECONDS`` have passed since
    the ``last`` one (epoch s), rate and time to ``max_iter`` counted from ``since``, the start's
    own beginning. Returns the time of the latest line."""
    now = time.time()
    if now - float(last) < REPORT_SECONDS:
        return np.float64(last)
    rate = int(iteration) / max(now - float(since), 1e-9)
    log.info("L-BFGS start %d: iteration %d, objective %.6f, max |gradient| %.1e, %.3g "
             "iterations/s, at most %.0f s to max_iter", int(start), int(iteration), float(value),
             float(grad_norm), rate, (int(max_iter) - int(iteration)) / max(rate, 1e-9))
    return np.float64(now)


@partial(jax.jit, static_argnames=("objective", "memory"))
def _solve(objective: Callable, x0s, data, max_iter: Array, grad_tol: Array, ftol: Array,
           ftol_window: Array, memory: int) -> tuple:  # fmt: skip
    """All starts ``x0s`` (leaves with a leading starts axis) minimised one after another."""
    opt = optax.lbfgs(memory_size=memory)
    clock = jax.ShapeDtypeStruct((), jnp.float64)

    def one(best, args):  # best: the lowest objective of the earlier converged starts
        index, x0 = args
        fun = partial(objective, data=data)

        def body(carry):
            x, state, fresh, k, nfev, _, last, ref = carry
            value, grad = _value_and_grad(state)  # at x, carried: no evaluation here
            updates, new_state = opt.update(grad, state, x, value=value, grad=grad, value_fn=fun)
            new_x = optax.apply_updates(x, updates)
            new_value, new_grad = _value_and_grad(new_state)
            g = max_abs(new_grad)
            finite = jnp.isfinite(new_value) & jnp.isfinite(g)
            # the line search's last resort did not descend (or left the domain): kept is the
            # old point, from which a fit with a memory retries once by steepest descent (as
            # L-BFGS-B does); one without stops
            failed = ~finite | ~((new_value < value) | (g <= grad_tol))
            # every ftol_window iterations: the objective against the one a window ago
            looked = ~failed & ((k + 1) % ftol_window == 0)
            fall = ref - new_value
            projected = new_value - fall * (max_iter - k - 1) / ftol_window  # at max_iter
            flat = (looked & (ftol > 0) & (fall <= ftol * jnp.abs(new_value))
                    & (projected > best))  # fmt: skip
            status = jnp.select(
                [failed & fresh & ~finite, failed & fresh, failed, g <= grad_tol,
                 k + 1 >= max_iter, flat],
                [NOT_FINITE, NO_DECREASE, RUNNING, CONVERGED, MAX_ITER, FLAT],
                RUNNING)  # fmt: skip
            ref = jnp.where(looked, new_value, ref)
            x, state = jax.lax.cond(failed, lambda: (x, _fresh(opt, x, value, grad)),
                                    lambda: (new_x, new_state))  # fmt: skip
            k = jnp.where(failed, k, k + 1)
            last = jax.lax.cond(
                ((k % REPORT_EVERY == 0) | (k < REPORT_EVERY)) & (status == RUNNING) & ~failed,
                lambda: io_callback(_report, clock, index, k, new_value, g, max_iter, since, last),
                lambda: last)  # fmt: skip
            nfev = nfev + new_state[-1].info.num_linesearch_steps
            return x, state, failed, k, nfev, status, last, ref

        value0, grad0 = jax.value_and_grad(fun)(x0)
        g0 = max_abs(grad0)
        status0 = jnp.select([~(jnp.isfinite(value0) & jnp.isfinite(g0)), g0 <= grad_tol,
                              max_iter <= 0], [NOT_FINITE, CONVERGED, MAX_ITER], RUNNING)
        since = io_callback(_now, clock, index)
        x, state, _, k, nfev, status, _, _ = jax.lax.while_loop(
            lambda c: c[5] == RUNNING, body,
            (x0, _fresh(opt, x0, value0, grad0), jnp.asarray(True), jnp.asarray(0),
             jnp.asarray(1), status0, since, value0))  # fmt: skip
        value, grad = _value_and_grad(state)
        best = jnp.where(status == CONVERGED, jnp.minimum(best, value), best)
        return best, (x, value, max_abs(grad), k, nfev, status)

    n = jax.tree_util.tree_leaves(x0s)[0].shape[0]
    return jax.lax.scan(one, jnp.asarray(jnp.inf, jnp.float64), (jnp.arange(n), x0s))[1]


def minimize(objective: Callable, starts: Sequence, data, max_iter: int, grad_tol: float,
             ftol: float = 0.0, ftol_window: int = 1000,
             memory: int = MEMORY) -> list[Result]:  # fmt: skip
    """Minimise ``objective(x, data) -> scalar`` by L-BFGS from every start in ``starts``
    (pytrees of one structure and shape; an array's rows are starts) to the gradient criterion
    ``grad_tol``, at most ``max_iter`` iterations each; when ``ftol > 0``, a start that cannot
    win stops (``STOPS[FLAT]``, see the module doc; the criterion stays unmet); a start that
    runs longer than ``REPORT_SECONDS`` logs its progress; ``memory``: the correction pairs
    kept (each costs a few passes over the parameters per iteration). Returns one ``Result`` per
    start, in order."""
    x, *figures = _solve(objective, jax.tree_util.tree_map(lambda *x: jnp.stack(x), *starts),
                         data, jnp.asarray(max_iter), jnp.asarray(grad_tol, jnp.float64),
                         jnp.asarray(ftol, jnp.float64), jnp.asarray(max(ftol_window, 1)),
                         memory)
    value, grad_norm, nit, nfev, status = jax.device_get(figures)
    return [Result(jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], x), float(value[k]),
                   float(grad_norm[k]), int(nit[k]), int(nfev[k]), STOPS[int(status[k])])
            for k in range(len(value))]  # fmt: skip
