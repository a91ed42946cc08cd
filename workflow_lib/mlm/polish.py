"""The L-BFGS polish of a factored-family MLM solution, in float64, and the gradient criterion
that says how far from a stationary point any run ended."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.mlm.lbfgs import max_abs, minimize
from workflow_lib.mlm.models import ArchSpec, Params
from workflow_lib.mlm.objective import full_objective

Array = jax.Array

POLISH_CONVERGENCE = (
    "largest absolute gradient entry of the training objective (all sites of all training "
    "sequences, l2 included) below polish_grad_tol after the L-BFGS polish"
)


def polish(spec: ArchSpec, params: Params, train: np.ndarray, l2: float, max_iter: int,
           grad_tol: float) -> tuple[Params, dict[str, float | int | bool | str]]:  # fmt: skip
    """L-BFGS polish, in float64, of one factored-family model from ``params`` (an Adam
    solution) on the objective Adam minimised: ``objective.full_objective`` on all sites of
    ``train: (M, L)``, run until the largest gradient entry is below ``grad_tol``.

    Returns the polished params and ``polish_iterations``, ``polish_converged`` and
    ``polish_stop_reason`` (a ``max_iter`` or line-search stop is a failure to report).
    """
    start = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), params)
    (res,) = minimize(_objective(spec), [start], (jnp.asarray(train), jnp.float64(l2)), max_iter,
                      grad_tol)  # fmt: skip
    return res.x, {
        "polish_iterations": res.nit, "polish_converged": res.converged(grad_tol),
        "polish_stop_reason": res.message}


@cache
def _objective(spec: ArchSpec) -> Callable[[Params, tuple[Array, Array]], Array]:
    """``objective.full_objective`` of ``spec`` as ``objective(params, (seqs, l2))`` (one function
    per ``spec``, so its L-BFGS program compiles once per data shape)."""
    return lambda params, data: full_objective(spec, params, *data)


def grad_norm(spec: ArchSpec, params: Params, train: np.ndarray, l2: float) -> float:
    """Largest absolute gradient entry of the training objective (``objective.full_objective``
    on all sites of ``train: (M, L)``) at ``params``: how far from a stationary point a run
    ended, whatever its optimiser. One program per ``spec``, dtype and shape: the realisations
    of a training job share it."""
    return float(_max_abs_grad(spec, params, jnp.asarray(train), l2))


@partial(jax.jit, static_argnames="spec")
def _max_abs_grad(spec: ArchSpec, params: Params, train: Array, l2: float) -> Array:
    return max_abs(jax.grad(full_objective, argnums=1)(spec, params, train, l2))
