"""Full-batch L-BFGS to a gradient criterion, in two compiled programs for every start: the
pseudo-likelihood fits (``plm.py``, ``workflow_lib.proteins.models``) and the polish of the
factored family's Adam solution (``polish.polish``).

The iteration is optax's L-BFGS (``memory`` correction pairs, ``MEMORY`` unless told) with its zoom
line search (strong Wolfe conditions, first trial step 1) inside a ``lax.while_loop``; the starts
run one after another (each stops at its own iteration count, where ``vmap`` would run all to the
slowest one's), each in calls of about ``CHUNK_SECONDS`` of the same compiled loop, between which
the host writes the progress lines: the programs hold no host callback, which JAX's persistent
compilation cache cannot keep, so a job finds them compiled by an earlier one. The only regular stop
is the gradient criterion, the largest absolute gradient entry below ``grad_tol``; the others leave
it above and say why (``STOPS``): ``max_iter`` iterations; with ``ftol > 0``, a start that cannot
win (``FLAT``): its objective fell by less than ``ftol`` (relative) over the last ``ftol_window``
iterations (looked at every ``ftol_window`` iterations: it creeps along a flat valley) and, falling
on at that rate until ``max_iter``, it would still end above the lowest objective of an earlier
start that met the criterion (so no start is dropped before one has converged, and the lowest
converged objective stays the lowest unless a dropped start's descent would have sped up by the
ratio of that gap to its projected fall); or a line search that found no decrease (or a non-finite
objective) twice in a row, the second time from the steepest-descent step of an emptied memory, as
in L-BFGS-B (the last point with a decrease is kept, as at a float64 precision limit near a
minimum).

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

from workflow_lib.runtime import checkpoints

Array = jax.Array
log = logging.getLogger("workflow_lib.mlm")

MEMORY = 20  # correction pairs kept (default)
REPORT_SECONDS = 30.0  # at least this long between two progress lines of one start
CHUNK_SECONDS = 1.0  # about this long per compiled call: the host looks at the clock between
FIRST_CHUNK = 10  # iterations of a start's first call, before its rate is known
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


def _strong(carry: tuple) -> tuple:
    """``carry`` with no weakly typed leaf: ``_advance`` takes what ``_start`` and ``_advance``
    return with one signature, so it compiles once per shape."""
    return jax.tree_util.tree_map(lambda a: jax.lax.convert_element_type(a, a.dtype), carry)


@partial(jax.jit, static_argnames=("objective", "memory"))
def _start(objective: Callable, x0, data, max_iter: Array, grad_tol: Array,
           memory: int) -> tuple:  # fmt: skip
    """The carry of ``_advance`` at start ``x0``: its objective and gradient evaluated, the
    memory empty, ``status`` ``CONVERGED``, ``NOT_FINITE`` or ``MAX_ITER`` if it is one
    already, else ``RUNNING``."""
    opt = optax.lbfgs(memory_size=memory)
    value0, grad0 = jax.value_and_grad(partial(objective, data=data))(x0)
    g0 = max_abs(grad0)
    status0 = jnp.select([~(jnp.isfinite(value0) & jnp.isfinite(g0)), g0 <= grad_tol,
                          max_iter <= 0], [NOT_FINITE, CONVERGED, MAX_ITER], RUNNING)
    return _strong((x0, _fresh(opt, x0, value0, grad0), jnp.asarray(True), jnp.asarray(0),
                    jnp.asarray(1), status0, value0))


@partial(jax.jit, static_argnames=("objective", "memory"))
def _advance(objective: Callable, carry: tuple, data, until: Array, max_iter: Array,
             grad_tol: Array, ftol: Array, ftol_window: Array, best: Array,
             memory: int) -> tuple:  # fmt: skip
    """L-BFGS iterations from ``carry`` (``x``, optimiser state, whether the memory is empty,
    iterations ``k``, evaluations, ``status``, the objective at the last ``ftol_window`` look)
    until the start stops (``status`` not ``RUNNING``) or ``until`` iterations are done;
    ``best``: the lowest objective of the earlier converged starts."""
    opt = optax.lbfgs(memory_size=memory)
    fun = partial(objective, data=data)

    def body(carry):
        x, state, fresh, k, nfev, _, ref = carry
        value, grad = _value_and_grad(state)  # at x, carried: no evaluation here
        updates, new_state = opt.update(grad, state, x, value=value, grad=grad, value_fn=fun)
        new_x = optax.apply_updates(x, updates)
        new_value, new_grad = _value_and_grad(new_state)
        g = max_abs(new_grad)
        finite = jnp.isfinite(new_value) & jnp.isfinite(g)
        # the line search's last resort did not descend (or left the domain): kept is the old
        # point, from which a fit with a memory retries once by steepest descent (as L-BFGS-B
        # does); one without stops
        failed = ~finite | ~((new_value < value) | (g <= grad_tol))
        # every ftol_window iterations: the objective against the one a window ago
        looked = ~failed & ((k + 1) % ftol_window == 0)
        fall = ref - new_value
        projected = new_value - fall * (max_iter - k - 1) / ftol_window  # at max_iter
        flat = (looked & (ftol > 0) & (fall <= ftol * jnp.abs(new_value))
                & (projected > best))  # fmt: skip
        status = jnp.select(
            [failed & fresh & ~finite, failed & fresh, failed, g <= grad_tol, k + 1 >= max_iter,
             flat],
            [NOT_FINITE, NO_DECREASE, RUNNING, CONVERGED, MAX_ITER, FLAT],
            RUNNING)  # fmt: skip
        ref = jnp.where(looked, new_value, ref)
        x, state = jax.lax.cond(failed, lambda: (x, _fresh(opt, x, value, grad)),
                                lambda: (new_x, new_state))  # fmt: skip
        k = jnp.where(failed, k, k + 1)
        nfev = nfev + new_state[-1].info.num_linesearch_steps
        return x, state, failed, k, nfev, status, ref

    return _strong(jax.lax.while_loop(lambda c: (c[5] == RUNNING) & (c[3] < until), body, carry))


def _run_start(name: str, objective: Callable, x0, data, bounds: tuple, best: float,
               memory: int) -> tuple:  # fmt: skip
    """Start ``name`` from ``x0`` to its stop, in compiled calls of about ``CHUNK_SECONDS`` each, a
    progress line between two when ``REPORT_SECONDS`` have passed since the last one, each a
    boundary of the job's checkpoint (``workflow_lib.runtime.checkpoints``: loop ``name``, from
    which it resumes). ``bounds``: ``max_iter``, ``grad_tol``, ``ftol``, ``ftol_window``. Returns
    ``x``, the objective, the largest absolute gradient entry, iterations, evaluations and the
    status."""
    max_iter, grad_tol, ftol, ftol_window = bounds
    ck = checkpoints.current()
    carry = _start(objective, x0, data, max_iter, grad_tol, memory)
    _, carry = ck.resume(name, carry) or (0, carry)
    since = last = time.perf_counter()
    k0 = k = int(carry[3])
    status, chunk = int(carry[5]), FIRST_CHUNK
    while status == RUNNING:
        t = time.perf_counter()
        carry = _advance(objective, carry, data, jnp.asarray(k + chunk), max_iter, grad_tol, ftol,
                         ftol_window, jnp.asarray(best, jnp.float64), memory)
        done, status = int(carry[3]), int(carry[5])
        now = time.perf_counter()
        chunk = checkpoints.chunk_steps(done - k, now - t, CHUNK_SECONDS, 100_000)
        k = done
        if status == RUNNING and now - last >= REPORT_SECONDS:
            value, grad = _value_and_grad(carry[1])
            rate = (k - k0) / max(now - since, 1e-9)
            log.info("%s: iteration %d, objective %.6f, max |gradient| %.1e, %.3g "
                     "iterations/s, at most %.0f s to max_iter", name, k, float(value),
                     float(max_abs(grad)), rate, (int(max_iter) - k) / max(rate, 1e-9))
            last = now
        ck.boundary(name, k, int(max_iter), carry)
    x, state, _, k, nfev, status, _ = carry
    value, grad = _value_and_grad(state)
    return x, float(value), float(max_abs(grad)), int(k), int(nfev), int(status)


def minimize(objective: Callable, starts: Sequence, data, max_iter: int, grad_tol: float,
             ftol: float = 0.0, ftol_window: int = 1000,
             memory: int = MEMORY) -> list[Result]:  # fmt: skip
    """Minimise ``objective(x, data) -> scalar`` by L-BFGS from every start in ``starts``
    (pytrees of one structure and shape; an array's rows are starts) to the gradient criterion
    ``grad_tol``, at most ``max_iter`` iterations each; when ``ftol > 0``, a start that cannot
    win stops (``STOPS[FLAT]``, see the module doc; the criterion stays unmet); a start that
    runs longer than ``REPORT_SECONDS`` logs its progress; ``memory``: the correction pairs
    kept (each costs a few passes over the parameters per iteration). Returns one ``Result`` per
    start, in order.

    In a job with checkpoints (``workflow_lib.runtime.checkpoints``) the call is a part named
    ``L-BFGS n`` (the job's n-th call in its scope), its starts ``L-BFGS n start i``: a start
    finished before the job was stopped is taken from the checkpoint, the one it stopped in
    resumes from its last boundary."""
    data = jax.device_put(data)
    bounds = (jnp.asarray(max_iter), jnp.asarray(grad_tol, jnp.float64),
              jnp.asarray(ftol, jnp.float64), jnp.asarray(max(ftol_window, 1)))
    ck = checkpoints.current()
    call = ck.unit("L-BFGS")
    results, best, kept = [], np.inf, 0
    for index, x0 in enumerate(starts):
        name = f"{call} start {index}"
        out = ck.result(name, (x0, 0.0, 0.0, 0, 0, 0))
        kept += out is not None
        if out is None:
            out = _run_start(name, objective, x0, data, bounds, best, memory)
            ck.finish(name, out)
        x, fun, grad_norm, nit, nfev, status = out
        if status == CONVERGED:
            best = min(best, fun)
        results.append(Result(x, fun, grad_norm, nit, nfev, STOPS[status]))
    if kept:
        log.info("%s: %d of %d starts finished before the job was stopped, taken from its "
                 "checkpoint", call, kept, len(results))
    return results
