"""The measured sample complexity of factored attention (Rende et al. 2024, Fig. 3 right): the
pseudo-likelihood fit of the factored family (``plm.fit_plm``) on the first M training
sequences, for every M of a grid, scored on one test set and on its sequences absent from the
whole training set (held out at every M)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import jax
import numpy as np

from workflow_lib.mlm.plm import PLMOptions, effective_l2, fit_plm
from workflow_lib.potts.sequences import forced_errors, in_training_set
from workflow_lib.runtime import checkpoints

log = logging.getLogger("workflow_lib.mlm")

CHECKPOINT = "sample complexity"  # the sweep's progress in the job's checkpoint
COLUMNS = ("test_loss", "test_loss_heldout", "train_loss", "pearson_r", "grad_norm",
           "train_accuracy", "train_errors")  # fmt: skip


@dataclass
class Curve:
    """Outcome of ``curve``: ``columns`` (each ``(n_M,)``: ``M``, the metrics ``COLUMNS``,
    ``forced_errors``, ``separable``, ``converged``, ``best_start``, ``starts_at_best``,
    ``l2_effective``; see ``curve``), ``optimal_loss`` (nats, on the test set),
    ``optimal_loss_heldout`` (on its sequences absent from the training set: NaN when none) and
    ``test_overlap`` (fraction of the test sequences in the full training set)."""

    columns: dict[str, np.ndarray]
    optimal_loss: float
    optimal_loss_heldout: float
    test_overlap: float

    @property
    def all_converged(self) -> bool:
        return bool(np.all(self.columns["converged"]))


def curve(train: np.ndarray, test: np.ndarray, J: np.ndarray, U: np.ndarray, beta: float,
          key: jax.Array, sizes: Sequence[int], penalty: str,
          options: PLMOptions) -> Curve:  # fmt: skip
    """Factored attention (cross-entropy, l2, full-batch L-BFGS to ``options.grad_tol`` from the
    starts ``options.start``/``options.restarts``, the lowest converged objective kept) on
    ``train[:M]: (M, L)`` for every M of ``sizes: (n_M,)``; test loss on ``test: (n_test, L)``;
    the true model ``(J: (L, L), U: (C, C), beta)``; ``key``: every fit's random starts.

    ``options``: the factored fit's options (``plm.PLMOptions``), its ``l2`` the penalty weight
    in the form ``penalty``: ``mean``, l2 beside the loss averaged over sequences and sites;
    ``sum``, eq. (6) of the paper, fitted as the averaged objective with l2 / (M L)
    (``plm.effective_l2``: ``l2_effective``). A start stopped by ``ftol`` is not converged.
    Per M besides ``COLUMNS``: ``converged``,
    ``best_start`` (0 is the spectral start when there is one), ``starts_at_best`` (converged
    starts within 1e-4 of the kept objective, relative), ``train_errors`` (training tokens the
    fit gets wrong), ``forced_errors`` (those the conflicts of ``train[:M]`` force wrong on every
    classifier: ``sequences.forced_errors``) and ``separable`` (the fit's errors are only the
    forced ones: the training set is separated as far as its data allow). ``test_loss_heldout``
    is measured on the test sequences absent from the whole ``train``: one held-out set for
    every M. A fit with fewer errors than the data force is impossible and raises. In a job with
    checkpoints, the fits of each M are its L-BFGS parts in the scope ``M = <M>``
    (``workflow_lib.runtime.checkpoints``, ``lbfgs.minimize``), the sweep's progress loop
    ``CHECKPOINT``.
    """
    sizes = np.asarray(sizes)
    if sizes.max() > len(train):
        raise ValueError(f"sample_complexity.M goes up to {sizes.max()} but the data set has "
                         f"{len(train)} training sequences; raise sampling.n_train")
    l2s = [effective_l2(options.l2, penalty, int(M), J.shape[0]) for M in sizes]
    in_train = in_training_set(train, test)
    heldout = test[~in_train]
    fits, ck = [], checkpoints.current()
    for M, l2 in zip(sizes, l2s, strict=True):
        with ck.scope(f"M = {M}"):
            fit = fit_plm("factored", replace(options, l2=l2), train[:M], test, J, U, beta,
                          key, heldout=heldout)
        m = fit.metrics
        fits.append(m)
        log.info("M = %d: test loss %.4f, train loss %.4f, train accuracy %.4f, max |gradient| "
                 "%.1e, start %d (%s), %d of %d starts at that minimum: %s", M, m["test_loss"],
                 m["train_loss"], m["train_accuracy"], m["grad_norm"], m["best_restart"],
                 options.start, m["starts_at_best"], m["starts"],
                 "converged" if m["converged"] else f"NOT CONVERGED ({m['stop_reason']})")
        ck.boundary(CHECKPOINT, len(fits), len(sizes))
    column = lambda k: np.array([m[k] for m in fits])  # noqa: E731
    forced = np.array([forced_errors(train[:M]) for M in sizes])
    errors = column("train_errors")
    if np.any(errors < forced):
        raise RuntimeError(f"sample complexity: a fit has fewer training errors ({errors}) than "
                           f"the data force ({forced}); the error count is wrong")
    columns = {
        "M": sizes, **{k: column(k) for k in COLUMNS}, "forced_errors": forced,
        "separable": errors == forced, "converged": column("converged"),
        "best_start": column("best_restart"), "starts_at_best": column("starts_at_best"),
        "l2_effective": np.array(l2s),
    }  # fmt: skip
    return Curve(columns, fit.optimal_loss, fits[-1]["optimal_loss_heldout"],
                 float(np.mean(in_train)))
