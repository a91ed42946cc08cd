"""The theory on the one-shot task's frozen heads (Tiberi et al. 2024, Fig. 3): the
path-attended inputs of episodes, the finite-width theory over a grid of widths N and
temperatures T with T chosen per N on validation episodes, and the GP limit chosen the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.attention import model, theory
from workflow_lib.attention.heads import scores

log = logging.getLogger("workflow_lib.attention")


def episode_features(x0: jax.Array, Ws: Sequence[jax.Array], sigma0_sq: float) -> jax.Array:
    """``Phi: (n, N0, Pi)`` (float64, mean-pooling readout) of episodes ``x0: (n, T, N0)`` under
    frozen heads ``Ws``: one ``(H_l, N0, N0)`` per layer (logits ``x_sᵀ W x_t``)."""
    x = jnp.swapaxes(x0, 1, 2).astype(jnp.float64)  # (n, N0, T)
    omegas = [model.attention_maps(x, jnp.asarray(W, jnp.float64)) for W in Ws]
    readout = jnp.full(x.shape[-1], 1.0 / x.shape[-1])
    return model.path_features(x, omegas, readout, sigma0_sq)


def select(validation: np.ndarray) -> int:
    """Index of the best validation accuracy (the lowest temperature among ties, temperatures
    increasing)."""
    return int(np.argmax(validation))


class Grid(NamedTuple):
    """``accuracy: (nN, nT, 2)`` validation and test accuracy; ``correct: (nN, nT, n_test)``
    whether the mean predictor gets each test episode right; ``Us``: per layer
    ``(nN, nT, m, m)``; ``grad_max``, ``iterations``: ``(nN, nT)``; ``selected: (nN,)`` index
    of the validation-chosen T; the GP: ``gp: (nT, 2)``, ``gp_correct: (nT, n_test)``,
    ``gp_selected``, ``gp_U: (Pi, Pi)``."""

    accuracy: np.ndarray
    correct: np.ndarray
    Us: list[np.ndarray]
    grad_max: np.ndarray
    iterations: np.ndarray
    selected: np.ndarray
    gp: np.ndarray
    gp_correct: np.ndarray
    gp_selected: int
    gp_U: jax.Array


def grid(
    f: dict[str, jax.Array], heads: Sequence[int], widths: Sequence[int],
    temperatures: Sequence[float], sigma2: float, max_iter: int, gtol: float,
) -> Grid:
    """Minimise the action for every (N, T) on the training episodes ``f['phi/train']``,
    ``f['y/train']`` and score the predictor on ``phi/validation`` and ``phi/test`` (the test
    split never enters the choice of T). ``widths`` and ``temperatures`` increasing."""
    phi, y = f["phi/train"], f["y/train"]
    held_out = jnp.concatenate([f["phi/validation"], f["phi/test"]])  # one predictor call
    n_val = f["y/validation"].shape[0]

    y_held_out = np.asarray(jnp.concatenate([f["y/validation"], f["y/test"]]))

    def evaluate(U: jax.Array, T: float) -> tuple[list[float], np.ndarray]:
        """Validation and test accuracy, and per test episode whether the mean is right."""
        right = np.sign(np.asarray(theory.predictive_mean(phi, y, held_out, U, T))) == y_held_out
        return [float(right[:n_val].mean()), float(right[n_val:].mean())], right[n_val:]

    gp_U = theory.gp_order_parameters(heads, sigma2)[0]
    gp_scores = [evaluate(gp_U, T) for T in temperatures]
    gp = np.array([acc for acc, _ in gp_scores])  # (nT, 2)
    gp_correct = np.array([right for _, right in gp_scores])  # (nT, n_test)
    gp_sel = select(gp[:, 0])
    log.info("GP: validation %s -> T = %g, test %.3f", np.round(gp[:, 0], 3),
             temperatures[gp_sel], gp[gp_sel, 1])
    acc = np.zeros((len(widths), len(temperatures), 2))
    correct = np.zeros((*acc.shape[:2], len(y_held_out) - n_val), bool)
    Us = [np.zeros((*acc.shape[:2], m, m)) for m in theory.sizes(heads)]
    grad_max, iterations = np.zeros(acc.shape[:2]), np.zeros(acc.shape[:2], np.int64)
    start = time.perf_counter()
    for i, N in enumerate(widths):
        for j, T in enumerate(temperatures):
            sol = theory.minimise_action(phi, y, heads, N, T, sigma2, max_iter, gtol,
                                         hessian=False)
            for layer, U in enumerate(sol.Us):
                Us[layer][i, j] = U
            grad_max[i, j], iterations[i, j] = sol.grad_max, sol.iterations
            acc[i, j], correct[i, j] = evaluate(jnp.asarray(sol.Us[0]), T)
        elapsed, done = time.perf_counter() - start, (i + 1) / len(widths)
        log.info("N=%d: validation %s, test %s; %.0f s elapsed, ETA %.0f s", N,
                 np.round(acc[i, :, 0], 3), np.round(acc[i, :, 1], 3), elapsed,
                 elapsed * (1 - done) / done)
    selected = np.array([select(acc[i, :, 0]) for i in range(len(widths))])
    return Grid(acc, correct, Us, grad_max, iterations, selected, gp, gp_correct, gp_sel, gp_U)


def grid_datasets(g: Grid, f: dict[str, jax.Array], heads: Sequence[int], widths: Sequence[int],
                  temperatures: Sequence[float], score_width: int, n_pcs: int) -> dict:
    """The datasets of a theory artefact: the grid (``correct/test: (nN, nT, n_test)`` and
    ``gp/correct/test: (nT, n_test)``, 1 where the mean predictor gets a test episode right),
    the GP, and at ``score_width`` (its
    validation-chosen T) the PC overlaps ``pc_overlaps/{fw,gp}: (n_pcs,)`` of the training
    kernel and the head scores ``(L, H)`` of U."""
    i_s = list(widths).index(score_width)
    U_score = g.Us[0][i_s, g.selected[i_s]]
    phi, y = f["phi/train"], f["y/train"]
    n_pcs = min(n_pcs, phi.shape[0])
    return {"widths": np.array(widths), "temperatures": np.array(temperatures),
            "accuracy/validation": g.accuracy[..., 0], "accuracy/test": g.accuracy[..., 1],
            "correct/test": g.correct.astype(np.int8),
            "gp/correct/test": g.gp_correct.astype(np.int8),
            "selected": g.selected, "grad_max": g.grad_max, "iterations": g.iterations,
            **{f"U/{layer + 1}": U for layer, U in enumerate(g.Us)},
            "gp/validation": g.gp[:, 0], "gp/test": g.gp[:, 1], "gp_selected": g.gp_selected,
            "pc_overlaps/fw": theory.pc_overlaps(phi, y, jnp.asarray(U_score), n_pcs),
            "pc_overlaps/gp": theory.pc_overlaps(phi, y, g.gp_U, n_pcs),
            "head_scores": scores(U_score, len(heads), heads[0])}
