"""Stages ``replica_theory`` and ``replica_sims``: the replica theory of the square-loss problem and
its Gaussian-model simulations (Fig. 3 left). The Fig. 3 right sweep is
``stages_fits.sample_complexity``."""

from __future__ import annotations

import logging
import zlib

import numpy as np

from workflow_lib.core.artefacts import write_artefact
from workflow_lib.core.registry import Job
from workflow_lib.replica import curves, gaussian
from workflow_lib.studies.potts_paper.artefacts import REPLICA_SIMULATIONS, REPLICA_THEORY

log = logging.getLogger("workflow_lib.stages")

def _task(p: dict) -> gaussian.GaussianTask:
    """The Gaussian-model instance: one GOE J drawn from the config seed."""
    rng = np.random.default_rng([p["seed"], zlib.crc32(b"replica-couplings")])
    J = gaussian.goe_couplings(rng, p["replica"]["L"])
    return gaussian.gaussian_task(J, p["replica"]["delta"])


def replica_theory(job: Job) -> None:
    """Generalisation error from the saddle-point equations and the closed form, per lambda.

    ``alpha: (n,)`` is M/L (the paper's axis); the theory is evaluated at n/p = M/(L-1).
    Datasets: ``eps_saddle``, ``eps_closed_form``: ``(n_lambda, n)``; ``lambdas``; order
    parameters ``m, q, V: (n_lambda, n)`` of the saddle point.
    """
    p = job.params
    rep = p["replica"]
    task = _task(p)
    alpha = np.geomspace(rep["alpha_min"], rep["alpha_max"], rep["theory_alphas"])
    lambdas = np.asarray(rep["lambdas"], dtype=np.float64)
    grid = curves.theory_grid(task, alpha, lambdas)
    gap = grid.pop("max_relative_gap")
    log.info("replica theory: %d alphas x %d lambdas, max relative saddle/closed-form gap %.2e",
             len(alpha), len(lambdas), gap)
    write_artefact(
        job.output["theory"], REPLICA_THEORY, {"alpha": alpha, "lambdas": lambdas, **grid},
        p, seeds={"seed": p["seed"]},
        attrs={"L": task.L, "delta": rep["delta"], "sigma2": task.sigma2, "rho": task.rho,
               "Sigma_ii": task.sigma2 + task.rho, "max_relative_gap": gap,
               "lambda_convention": "A-space ridge lambda*p (theta-scaling)",
               "alpha_convention": "alpha = M/L; theory evaluated at M/(L-1)"},
    )


def replica_sims(job: Job) -> None:
    """Ridge / minimum-norm fits on Gaussian samples, exact test error, per lambda and alpha.

    Datasets: ``alpha: (n_alpha,)`` (M/L), ``M: (n_alpha,)``, ``lambdas``,
    ``errors: (n_lambda, n_alpha, realisations)``, ``mean``, ``sem``, ``train_mean`` (the fits'
    training error), ``theory`` (closed form at each point's M/(L-1)) and ``z = (mean - theory) /
    sem``: ``(n_lambda, n_alpha)``.
    """
    p = job.params
    rep = p["replica"]
    task = _task(p)
    rng = np.random.default_rng([p["seed"], zlib.crc32(b"replica-simulations")])
    sims = curves.simulation_grid(task, rep["sim_alphas"], rep["lambdas"], rep["realisations"],
                                  rng)
    log.info("simulations vs theory: max |z| = %.2f", float(np.max(np.abs(sims["z"]))))
    write_artefact(
        job.output["simulations"], REPLICA_SIMULATIONS,
        {"lambdas": np.asarray(rep["lambdas"]), **sims},
        p, seeds={"seed": p["seed"]},
        attrs={"L": task.L, "delta": rep["delta"], "sigma2": task.sigma2,
               "realisations": rep["realisations"]},
    )
