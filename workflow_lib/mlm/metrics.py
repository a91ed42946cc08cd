"""Metrics of masked-language-model training, pure functions of their inputs: the reconstruction
of ``J`` from an attention map, the squared norm of a parameter pytree (the l2 penalty) and the
window convergence criterion on a training-loss history."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.mlm.models import Params

Array = jax.Array

CONVERGENCE = (
    "relative improvement of the epoch-mean training loss between the last two windows of "
    "convergence_window x epochs epochs, (mean(previous) - mean(last)) / mean(last), below "
    "convergence_tol"
)
STOP = (
    "the held-out test loss stopped improving: at the end of a compiled chunk of epochs, its "
    "lowest value over the last stop_window epochs is below its lowest value before them by "
    "less than stop_tol (relative), a full window after the learning rate last changed, after "
    "stop_decays such plateaus each of which multiplied the learning rate by stop_decay; the "
    "parameters of the lowest held-out loss are kept"
)


def reconstruction(att: Array, J: Array, gauge: bool = False) -> tuple[Array, Array, Array]:
    """Compare an attention map with ``J`` on off-diagonal entries (Rende et al. 2024, Fig. 2b-c).

    Returns ``(error, r, c)``: ``c = <att, J> / <att, att>``, ``error = ||J - c att||^2 / ||J||^2``
    and the Pearson correlation ``r``. ``att, J: (L, L)``. With ``gauge`` the map's sign is a
    gauge freedom (factored attention: ``(A, V) -> (-A, -V)`` is the same model), so ``r`` is that
    of the fitted map ``c att``: ``sign(c) r``.
    """
    L = J.shape[0]
    mask = 1.0 - jnp.eye(L, dtype=att.dtype)
    a, j = att * mask, J.astype(att.dtype) * mask
    c = jnp.sum(a * j) / jnp.sum(a * a)
    error = jnp.sum(jnp.square(j - c * a)) / jnp.sum(j * j)
    n = L * (L - 1)
    da, dj = (a - jnp.sum(a) / n) * mask, (j - jnp.sum(j) / n) * mask
    r = jnp.sum(da * dj) / jnp.sqrt(jnp.sum(da * da) * jnp.sum(dj * dj))
    return error, jnp.sign(c) * r if gauge else r, c


def sq_norm(params: Params) -> Array:
    """Sum of squares of every parameter."""
    return sum(jnp.sum(jnp.square(x)) for x in jax.tree_util.tree_leaves(params))


def stopped(epoch: np.ndarray, loss: np.ndarray, window: int, tol: float) -> np.ndarray:
    """The stop criterion ``STOP`` after the evaluations ``epoch: (n,)`` (1-based, ascending)
    with held-out losses ``loss: (n, ...)`` (NaN where a run was not evaluated): per run, True
    once the lowest loss of the last ``window`` epochs is below the lowest before them by less
    than ``tol`` relative (never before ``window`` epochs have been evaluated before them)."""
    last = epoch > epoch[-1] - window if len(epoch) else epoch.astype(bool)
    if not last.any() or last.all():
        return np.zeros(loss.shape[1:], bool)
    before, recent = np.nanmin(loss[~last], axis=0), np.nanmin(loss[last], axis=0)
    return (before - recent) < tol * np.abs(before)


def convergence(train_loss: np.ndarray, window: float, tol: float) -> dict[str, float | bool]:
    """The stated convergence criterion (``CONVERGENCE``) on the per-epoch training loss
    ``train_loss: (epochs,)``: ``w = max(1, round(window * epochs))`` epochs per window;
    ``rel_improvement = (mean(loss[-2w:-w]) - mean(loss[-w:])) / mean(loss[-w:])``, converged
    when below ``tol`` (never with fewer than two epochs, or a non-finite loss)."""
    n = len(train_loss)
    w = max(1, round(window * n))
    if n < 2 * w:
        return {"converged": False, "rel_improvement": float("nan"), "convergence_epochs": w}
    last, previous = np.mean(train_loss[-w:]), np.mean(train_loss[-2 * w : -w])
    rel = float((previous - last) / last)
    return {"converged": bool(np.isfinite(rel) and rel < tol), "rel_improvement": rel,
            "convergence_epochs": w}  # fmt: skip
