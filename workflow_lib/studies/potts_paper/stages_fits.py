"""Stages ``train`` (MLM per architecture and realisation), ``plm`` (pseudo-likelihood
baselines) and ``sample_complexity`` (factored attention over the training-set size M)."""

from __future__ import annotations

import logging

import numpy as np

from workflow_lib.core.artefacts import write_artefact
from workflow_lib.core.config import schema_default
from workflow_lib.core.keys import stage_key
from workflow_lib.core.registry import Job
from workflow_lib.mlm.architectures import parse_arch
from workflow_lib.mlm.options import TrainingOptions
from workflow_lib.mlm.plm import PLMOptions, family, fit_plm
from workflow_lib.mlm.sample_complexity import curve
from workflow_lib.mlm.train import Problem, train_many
from workflow_lib.potts.artefact import load_samples
from workflow_lib.runtime.checkpoints import resumable
from workflow_lib.studies.potts_paper.artefacts import MLM_TRAIN, PLM_FIT, SAMPLE_COMPLEXITY
from workflow_lib.studies.potts_paper.registry import family_option

log = logging.getLogger("workflow_lib.stages")


def training_options(training: dict, arch: str) -> TrainingOptions:
    """The ``TrainingOptions`` of run ``arch`` (``parse_arch``) from a ``training`` config
    section: its family's learning rate (``learning_rates``, else ``learning_rate``), restarts,
    polish iterations, epochs and stop window (``family_option``: ``arch_restarts``,
    ``arch_polish_max_iter``, ``arch_epochs``, ``arch_stop_window``), its mixing ``a`` when
    interpolated, every other option as given."""
    fam, a = parse_arch(arch)
    t = training
    return TrainingOptions(
        optimizer=t["optimizer"],
        learning_rate=t["learning_rates"].get(fam, t["learning_rate"]),
        batch_size=t["batch_size"], epochs=family_option(t, fam, "epochs"),
        restarts=family_option(t, fam, "restarts"), l2=t["l2"], init_scale=t["init_scale"],
        model_dim=t["model_dim"], vanilla_sites=t["vanilla_sites"], mask_token=t["mask_token"],
        eval_every=t["eval_every"], convergence_window=t["convergence_window"],
        convergence_tol=t["convergence_tol"],
        polish_max_iter=family_option(t, fam, "polish_max_iter"),
        polish_grad_tol=t["polish_grad_tol"],
        stop_window=family_option(t, fam, "stop_window"), stop_tol=t["stop_tol"],
        stop_decays=t["stop_decays"], stop_decay=t["stop_decay"], a=a,
    )


def plm_options(kind: str, plm: dict) -> PLMOptions:
    """The ``PLMOptions`` of fit ``kind`` from a ``plm`` config section: ``l2`` the family's
    (``l2_factored`` or ``l2_full``), ``start`` its ``factored_start``, no relative-reduction
    stop (``ftol`` 0), every other option as given."""
    return PLMOptions(l2=plm[f"l2_{family(kind)}"], max_iter=plm["max_iter"],
                      grad_tol=plm["grad_tol"], ftol=0.0, ftol_window=1,
                      start=plm["factored_start"], restarts=plm["restarts"],
                      init_scale=plm["init_scale"], l2_full=plm["l2_full"])


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
    options = training_options(p["training"], p["arch"])
    problems = []
    for r in p["realisations"]:
        train_seqs, test_seqs, J, U, beta = load_samples(job.input[f"samples_r{r}"])
        problems.append(Problem(train_seqs, test_seqs, J, U, beta,
                                stage_key(p["seed"], f"train/{p['arch']}", r)))
    for r, problem, result in zip(p["realisations"], problems,
                                  train_many(arch, options, problems), strict=True):
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
                   "learning_rate": options.learning_rate, "optimizer": options.optimizer,
                   "optimal_loss": result.optimal_loss, "beta": problem.beta, **_scalars(m)},
        )


def plm(job: Job) -> None:
    """Pseudo-likelihood fit (``params['kind']``, one of ``PLM_KINDS``) on one realisation.

    Datasets: ``attention: (L, L)`` after the scale fit, ``params/...``, ``J``.
    """
    p = job.params
    kind = p["kind"]
    train_seqs, test_seqs, J, U, beta = load_samples(job.input["samples"])
    key = stage_key(p["seed"], f"plm/{kind}", p["realisation"])
    result = fit_plm(kind, plm_options(kind, p["plm"]), train_seqs, test_seqs, J, U, beta, key)
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
    # the random starts at the schema's plm.init_scale: the job's slice holds no plm section
    options = PLMOptions(l2=sc["l2"], max_iter=sc["max_iter"], grad_tol=sc["grad_tol"],
                         ftol=sc["ftol"], ftol_window=sc["ftol_window"], start=sc["start"],
                         restarts=sc["restarts"], init_scale=schema_default("plm.init_scale"),
                         l2_full=p["l2_full"])  # fmt: skip
    result = curve(train_seqs, test_seqs, J, U, beta, key, sc["M"], sc["penalty"], options)
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
