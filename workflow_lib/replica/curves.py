"""The Fig. 3 left curves: the replica theory over a grid of (λ, α) and the simulations at the
same λ with the theory at each simulated size (Rende et al. 2024, Fig. 3 left).

α is M/L (the paper's axis); the theory is evaluated at n/p = M/(L-1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workflow_lib.replica import saddle, simulate
from workflow_lib.replica.gaussian import GaussianTask


def theory_grid(task: GaussianTask, alpha: np.ndarray, lambdas: Sequence[float]) -> dict:
    """Saddle point and closed form at every ``(λ, α)``, ``alpha: (n,)`` (M/L).

    Returns ``eps_saddle``, ``eps_closed_form``, order parameters ``m``, ``q``, ``V``: all
    ``(n_lambda, n)`` (``inf`` at the ridgeless peak λ = 0, n/p = 1), and ``max_relative_gap``
    between the two evaluations where both are finite.
    """
    alpha_np = np.asarray(alpha) * task.L / task.p
    points = [[saddle.solve_saddle_point(task, a, lam) if a != 1 or lam > 0 else None
               for a in alpha_np] for lam in lambdas]
    field = lambda name: np.array([[getattr(s, name) if s else np.inf for s in row]  # noqa: E731
                                   for row in points])
    closed = np.stack([saddle.generalisation_curve(task, alpha_np, lam) for lam in lambdas])
    eps = field("eps_g")
    finite = np.isfinite(eps) & np.isfinite(closed)
    gap = float(np.max(np.abs(eps - closed)[finite] / closed[finite]))
    return {"eps_saddle": eps, "eps_closed_form": closed, "m": field("m"), "q": field("q"),
            "V": field("V"), "max_relative_gap": gap}


def simulation_grid(task: GaussianTask, alphas: Sequence[float], lambdas: Sequence[float],
                    realisations: int, rng: np.random.Generator) -> dict:
    """Ridge / minimum-norm fits at every ``(λ, α)`` against the closed form at each M/(L-1).

    Returns ``alpha``, ``M``: ``(n_alpha,)``; ``errors: (n_lambda, n_alpha, realisations)``;
    ``mean``, ``sem``, ``train_mean`` (the fits' training error), ``theory`` and ``z = (mean -
    theory) / sem``: ``(n_lambda, n_alpha)``.
    """
    runs = [simulate.simulate_ridge(task, np.asarray(alphas), lam, realisations, rng)
            for lam in lambdas]
    stack = lambda key: np.stack([r[key] for r in runs])  # noqa: E731
    theory = np.stack([saddle.generalisation_curve(task, runs[0]["M"] / task.p, lam)
                       for lam in lambdas])
    return {"alpha": runs[0]["alpha"], "M": runs[0]["M"], "errors": stack("errors"),
            "mean": stack("mean"), "sem": stack("sem"), "train_mean": stack("train_mean"),
            "theory": theory,
            "z": (stack("mean") - theory) / stack("sem")}
