"""Stages ``couplings`` and ``sample``: one realisation of the generalised Potts model."""

from __future__ import annotations

import logging

import numpy as np

from workflow_lib.artefacts import POTTS_COUPLINGS, POTTS_SAMPLES, read_artefact, write_artefact
from workflow_lib.keys import stage_key
from workflow_lib.potts import model, sampling
from workflow_lib.stages import Job

log = logging.getLogger("workflow_lib.stages")

def couplings(job: Job) -> None:
    """Write ``J: (L, L)`` and ``U: (C, C)`` of realisation ``params['realisation']``."""
    p = job.params
    key = stage_key(p["seed"], "couplings", p["realisation"])
    J, U = model.draw_couplings(key, p["potts"]["L"], p["potts"]["C"], p["potts"]["U"])
    write_artefact(
        job.output["couplings"], POTTS_COUPLINGS, {"J": J, "U": U}, p,
        seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={"L": J.shape[0], "C": U.shape[0], "U_kind": p["potts"]["U"]},
    )


def sample(job: Job) -> None:
    """Tune beta (unless given), sample train and test sequences, store them with diagnostics.

    Datasets: ``train: (n_train, L) uint8``, ``test: (n_test, L) uint8``, ``J``, ``U``,
    ``saved_energy: (n_train + n_test,)``, ``burn_in_energy: (burn_in, n_monitor)``,
    ``split_position``, and, when tuned, ``tuning/beta`` and ``tuning/hamming: (rounds, K)``.
    """
    p = job.params
    cpl = read_artefact(job.input["couplings"], POTTS_COUPLINGS, required=("J", "U"))
    J, U = cpl["J"], cpl["U"]
    key = stage_key(p["seed"], "sample", p["realisation"])
    protocol = p["sampling"]["protocol"]
    extra: dict[str, np.ndarray] = {}
    beta = p["potts"]["beta"]
    if beta is None:
        tuning = sampling.tune_beta(key, J, U, protocol, p["beta_tuning"])
        beta = tuning.beta
        extra = {"tuning/beta": tuning.betas, "tuning/hamming": tuning.hamming}
        log.info("tuned beta = %.4f", beta)
    data = sampling.draw_dataset(key, J, U, beta, p["sampling"])
    dtype = np.uint8 if U.shape[0] <= 256 else np.int32
    log.info(
        "sampled %d + %d sequences: mean Hamming %.3f, tau_int %.2f sweeps, ESS %.0f, "
        "optimal test loss %.4f nats", len(data.train), len(data.test), data.mean_hamming,
        data.tau_int_sweeps, data.ess, data.optimal_test_loss,
    )
    write_artefact(
        job.output["samples"], POTTS_SAMPLES,
        {
            "train": data.train.astype(dtype), "test": data.test.astype(dtype),
            "J": J, "U": U, "saved_energy": data.saved_energy,
            "burn_in_energy": data.burn_in_energy, "split_position": data.position, **extra,
        },
        p, seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={
            "beta": beta, "beta_tuned": p["potts"]["beta"] is None, "protocol": protocol,
            "hamming_pairs": sampling.HAMMING_PAIRS[protocol],
            "mean_hamming": data.mean_hamming, "tau_int_sweeps": data.tau_int_sweeps,
            "ess": data.ess, "optimal_test_loss": data.optimal_test_loss,
            "split": "random permutation of the saved configurations into train and test",
        },
    )

