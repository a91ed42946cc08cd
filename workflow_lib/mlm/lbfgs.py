"""Full-batch L-BFGS to a gradient criterion: the pseudo-likelihood fits (``plm.py``) and the
polish of the factored family's Adam solution (``polish.polish``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.optimize


def minimize(value_and_grad: Callable, x0: np.ndarray, data, max_iter: int,
             grad_tol: float) -> scipy.optimize.OptimizeResult:  # fmt: skip
    """scipy L-BFGS-B from the flat start ``x0``; ``value_and_grad(x, data)`` is jitted.

    The only regular stop is the gradient criterion (``gtol = grad_tol`` on the largest
    gradient entry; ``ftol = 0`` disables the relative-decrease stop); anything else
    (``max_iter``, a failed line search) leaves ``grad_norm`` above ``grad_tol``.
    Returns the scipy result with ``grad_norm`` (max-abs gradient at ``res.x``) attached.
    """

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = value_and_grad(x, data)
        return float(value), np.asarray(grad, np.float64)

    options = {"maxiter": max_iter, "ftol": 0.0, "gtol": grad_tol, "maxcor": 20}
    res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", options=options)
    res.grad_norm = float(np.max(np.abs(fun(res.x)[1])))
    return res
