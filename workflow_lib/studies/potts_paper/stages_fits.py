"""Stages ``train`` (MLM per architecture and realisation), ``plm`` (pseudo-likelihood
baselines) and ``sample_complexity`` (factored attention over the training-set size M)."""

from __future__ import annotations

import logging

import numpy as np

from workflow_lib.core.artefacts import write_artefact
from workflow_lib.core.keys import stage_key
from workflow_lib.core.registry import Job
from workflow_lib.mlm.architectures import parse_arch, training_config
from workflow_lib.mlm.plm import fit_plm, plm_config
from workflow_lib.mlm.sample_complexity import curve
from workflow_lib.mlm.train import Problem, train_many
from workflow_lib.potts.artefact import load_samples
from workflow_lib.runtime.checkpoints import resumable
from workflow_lib.studies.potts_paper.artefacts import MLM_TRAIN, PLM_FIT, SAMPLE_COMPLEXITY

log = logging.getLogger("workflow_lib.stages")

def _scalars(metrics: dict) -> dict[str, float | int | bool | str]:
    return {k: v for k, v in metrics.items() if isinstance(v, int | float | bool | str)}


@resumable
def train(job: Job) -> None:
    """Train one architecture on each realisation of the job's chunk (``realisations``), side by
    side in one program (``train_many``); one artefact per realisation.

    Datasets: ``history/{epoch,train_loss,test_loss,recon_error,pearson_r}: (n_eval,)``,
    ``restarts/{train_loss,test_loss}: (R,)`` (every restart's final losses),
    ``attention: (L, L)`` (factored: after the scale fit), ``params/...``, ``J: (L, L)``.
    Attributes: ``arch``, ``a`` (interpolated only), ``optimal_loss`` and the final metrics
    (``realisations_per_program``: the size of the chunk it was trained in). Resumes from the
    job's checkpoint (``workflow_lib.runtime.checkpoints``) at the end of a chunk of epochs.
    """
    p = job.params
    arch, a = parse_arch(p["arch"])
    training = p["training"]
    cfg = training_config(training, p["arch"])
    lr = cfg["learning_rate"]
    problems = []
    for r in p["realisations"]:
        train_seqs, test_seqs, J, U, beta = load_samples(job.input[f"samples_r{r}"])
        problems.append(Problem(train_seqs, test_seqs, J, U, beta,
                                stage_key(p["seed"], f"train/{p['arch']}", r)))
    for r, problem, result in zip(p["realisations"], problems,
                                  train_many(arch, cfg, problems), strict=True):
        m = result.metrics
        log.info("%s r%d: test loss %.4f (optimal %.4f; held-out %.4f, %.0f %% of the test set "
                 "in the training set), reconstruction error %.3f, r = %.3f, %.0f steps/s, %s",
                 p["arch"], r, m["test_loss"], result.optimal_loss, m["test_loss_heldout"],
                 100 * m["test_overlap"], m["recon_error"], m["pearson_r"],
                 m["steps_per_second"], "converged" if m["converged"] else "NOT CONVERGED")
        write_artefact(
            job.output[f"model_r{r}"], MLM_TRAIN,
            {**{f"history/{k}": v for k, v in result.history.items()},
             **{f"params/{k}": v for k, v in result.params.items()},
             **{f"restarts/{k}": v for k, v in result.restarts.items()},
             "attention": result.attention, "J": problem.J},
            p, seeds={"seed": p["seed"], "realisation": r},
            attrs={"arch": p["arch"], "model": arch, "a": np.nan if a is None else a,
                   "learning_rate": lr, "optimizer": training["optimizer"],
                   "optimal_loss": result.optimal_loss, "beta": problem.beta, **_scalars(m)},
        )


def plm(job: Job) -> None:
    """Pseudo-likelihood fit (``params['kind']``, one of ``PLM_KINDS``) on one realisation.

    Datasets: ``attention: (L, L)`` after the scale fit, ``params/...``, ``J``.
    """
    p = job.params
    kind = p["kind"]
    train_seqs, test_seqs, J, U, beta = load_samples(job.input["samples"])
    cfg = plm_config(kind, p["plm"])
    key = stage_key(p["seed"], f"plm/{kind}", p["realisation"])
    result = fit_plm(kind, cfg, train_seqs, test_seqs, J, U, beta, key)
    m = result.metrics
    log.info("plm %s (%s start) r%d: test loss %.4f (optimal %.4f), r = %.3f, %d iterations, "
             "%.1f s, max |gradient| %.1e (tolerance %.0e): %s", kind, m["start"],
             p["realisation"], m["test_loss"],
             result.optimal_loss, m["pearson_r"], m["iterations"], m["wall_seconds"],
             m["grad_norm"], m["grad_tol"],
             "converged" if m["converged"] else f"NOT CONVERGED ({m['stop_reason']})")
    write_artefact(
        job.output["fit"], PLM_FIT,
        {**{f"params/{k}": v for k, v in result.params.items()},
         "attention": result.attention, "J": J},
        p, seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={"kind": kind, "optimal_loss": result.optimal_loss, "beta": beta,
               **_scalars(m)},
    )


@resumable
def sample_complexity(job: Job) -> None:
    """Factored attention (cross-entropy, small l2, full-batch L-BFGS to convergence from the
    configured starts, the lowest objective kept) on the first M training sequences, for every M
    of ``sample_complexity.M``; test loss on the realisation's test set
    (``workflow_lib.mlm.sample_complexity.curve``; the l2's form: ``sample_complexity.penalty``),
    resuming from the job's checkpoint (``workflow_lib.runtime.checkpoints``).

    Datasets: ``M: (n_M,)`` and per M the curve's columns (``test_loss``,
    ``test_loss_heldout``, ``train_loss``, ``pearson_r``, ``grad_norm``, ``converged``,
    ``best_start``, ``starts_at_best``, ``l2_effective``, ``train_accuracy``, ``train_errors``,
    ``forced_errors``, ``separable``); attributes ``test_overlap`` (fraction of the test
    sequences in the full training set), ``optimal_loss`` and ``optimal_loss_heldout`` (on the
    test set and on its held-out part), ``all_converged`` and ``penalty``.
    """
    p = job.params
    sc = p["sample_complexity"]
    train_seqs, test_seqs, J, U, beta = load_samples(job.input["samples"])
    key = stage_key(p["seed"], "sample_complexity", p["realisation"])
    result = curve(train_seqs, test_seqs, J, U, beta, key, sc, p["l2_full"])
    cols = result.columns
    if not result.all_converged:
        log.warning("sample complexity r%d: %d of %d fits NOT CONVERGED (M = %s)",
                    p["realisation"], int(np.sum(~cols["converged"])), len(cols["M"]),
                    cols["M"][~cols["converged"]].tolist())
    log.info("sample complexity r%d: separable (training errors only those the data force) at "
             "M = %s; forced errors %s", p["realisation"], cols["M"][cols["separable"]].tolist(),
             cols["forced_errors"].tolist())
    write_artefact(
        job.output["curve"], SAMPLE_COMPLEXITY, cols,
        p, seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={"L": J.shape[0], "C": U.shape[0], "optimal_loss": result.optimal_loss,
               "beta": beta, "n_test": len(test_seqs), "grad_tol": float(sc["grad_tol"]),
               "start": sc["start"], "all_converged": result.all_converged,
               "penalty": sc["penalty"], "optimal_loss_heldout": result.optimal_loss_heldout,
               "test_overlap": result.test_overlap},
    )
