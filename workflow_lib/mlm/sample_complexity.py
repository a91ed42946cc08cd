"""The measured sample complexity of factored attention (Rende et al. 2024, Fig. 3 right): the
pseudo-likelihood fit of the factored family (``plm.fit_plm``) on the first M training
sequences, for every M of a grid, scored on one test set."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import jax
import numpy as np

from workflow_lib.mlm.plm import effective_l2, fit_plm
from workflow_lib.sequences import first_near_duplicate, in_training_set

log = logging.getLogger("workflow_lib.mlm")

COLUMNS = ("test_loss", "test_loss_heldout", "train_loss", "pearson_r", "grad_norm",
           "train_accuracy")  # fmt: skip


@dataclass
class Curve:
    """Outcome of ``curve``: ``columns`` (each ``(n_M,)``: ``M``, the metrics ``COLUMNS``,
    ``converged``, ``best_start``, ``starts_at_best``, ``l2_effective``, ``separable``,
    ``near_duplicates``; see ``curve``), ``optimal_loss`` (nats, on the test set),
    ``first_near_duplicate`` (None when the training set holds no two sequences one spin apart)
    and ``test_overlap`` (fraction of the test sequences in the full training set)."""

    columns: dict[str, np.ndarray]
    optimal_loss: float
    first_near_duplicate: int | None
    test_overlap: float

    @property
    def all_converged(self) -> bool:
        return bool(np.all(self.columns["converged"]))


def curve(train: np.ndarray, test: np.ndarray, J: np.ndarray, U: np.ndarray, beta: float,
          key: jax.Array, sc: dict, l2_full: float) -> Curve:  # fmt: skip
    """Factored attention (cross-entropy, l2, full-batch L-BFGS to ``sc["grad_tol"]`` from the
    starts ``sc["start"]``/``sc["restarts"]``, the lowest converged objective kept) on
    ``train[:M]: (M, L)`` for every M of ``sc["M"]``; test loss on ``test: (n_test, L)``.

    ``sc``: a ``sample_complexity`` config section (``M``, ``l2``, ``penalty``, ``max_iter``,
    ``restarts``, ``start``, ``grad_tol``); ``l2_full``: the l2 of the full fit behind a
    spectral start. The penalty's form: ``mean``, l2 beside the loss averaged over sequences
    and sites; ``sum``, eq. (6) of the paper, fitted as the averaged objective with l2 / (M L)
    (``plm.effective_l2``: ``l2_effective``). Per M besides ``COLUMNS``: ``converged``,
    ``best_start`` (0 is the spectral start when there is one), ``starts_at_best`` (converged
    starts within 1e-4 of the kept objective, relative), ``separable`` (train accuracy 1) and
    ``near_duplicates`` (the first M sequences hold two one spin apart, which rules out
    separability).
    """
    sizes = np.asarray(sc["M"])
    if sizes.max() > len(train):
        raise ValueError(f"sample_complexity.M goes up to {sizes.max()} but the data set has "
                         f"{len(train)} training sequences; raise sampling.n_train")
    cfg = {"l2_full": l2_full,
           **{k: sc[k] for k in ("start", "l2", "max_iter", "restarts", "grad_tol")}}
    l2s = [effective_l2(sc["l2"], sc["penalty"], int(M), J.shape[0]) for M in sizes]
    fits = []
    for M, l2 in zip(sizes, l2s, strict=True):
        fit = fit_plm("factored", {**cfg, "l2": l2}, train[:M], test, J, U, beta, key)
        m = fit.metrics
        fits.append(m)
        log.info("M = %d: test loss %.4f, train loss %.4f, train accuracy %.4f, max |gradient| "
                 "%.1e, start %d (%s), %d of %d starts at that minimum: %s", M, m["test_loss"],
                 m["train_loss"], m["train_accuracy"], m["grad_norm"], m["best_restart"],
                 sc["start"], m["starts_at_best"], m["starts"],
                 "converged" if m["converged"] else "NOT CONVERGED")
    column = lambda k: np.array([m[k] for m in fits])  # noqa: E731
    first_pair = first_near_duplicate(train)
    columns = {
        "M": sizes, **{k: column(k) for k in COLUMNS}, "converged": column("converged"),
        "best_start": column("best_restart"), "starts_at_best": column("starts_at_best"),
        "l2_effective": np.array(l2s), "separable": column("train_accuracy") == 1.0,
        "near_duplicates": (sizes >= first_pair if first_pair is not None
                            else np.zeros(len(sizes), bool)),
    }  # fmt: skip
    return Curve(columns, fit.optimal_loss, first_pair,
                 float(np.mean(in_training_set(train, test))))
