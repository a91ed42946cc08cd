"""Stages ``couplings`` and ``sample``: one realisation of the generalised Potts model."""

from __future__ import annotations

import logging

import numpy as np

from workflow_lib.core.artefacts import read_artefact, write_artefact
from workflow_lib.core.errors import StageError
from workflow_lib.core.keys import stage_key
from workflow_lib.core.registry import Job
from workflow_lib.potts import model
from workflow_lib.potts.artefact import POTTS_SAMPLES
from workflow_lib.potts.beta_tuning import TuningError, TuningOptions
from workflow_lib.potts.datasets import SamplingOptions
from workflow_lib.potts.protocols import PROTOCOLS, ProtocolOptions
from workflow_lib.potts.verified_sampling import sample_to_target
from workflow_lib.runtime.checkpoints import resumable
from workflow_lib.studies.potts_paper.artefacts import POTTS_COUPLINGS

log = logging.getLogger("workflow_lib.stages")


def sampling_options(sampling: dict) -> SamplingOptions:
    """The ``SamplingOptions`` of a ``sampling`` config section."""
    s = sampling
    protocol = ProtocolOptions(name=s["protocol"], burn_in=s["burn_in"],
                               sweeps_between=s["sweeps_between"], replicas=s["replicas"],
                               ladder_min=s["ladder_min"])  # fmt: skip
    return SamplingOptions(protocol=protocol, n_train=s["n_train"], n_test=s["n_test"],
                           blocks=s["blocks"])


def tuning_options(beta_tuning: dict) -> TuningOptions:
    """The ``TuningOptions`` of a ``beta_tuning`` config section."""
    t = beta_tuning
    return TuningOptions(
        target_hamming=t["target_hamming"], beta_min=t["beta_min"], beta_max=t["beta_max"],
        grid_points=t["grid_points"], rounds=t["rounds"], pilot_samples=t["pilot_samples"],
        pilot_chains=t["pilot_chains"], tolerance=t["tolerance"], resamples=t["resamples"],
        fallback_rounds=t["fallback_rounds"], fallback_candidates=t["fallback_candidates"],
        candidates=t["candidates"],
    )


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


@resumable
def sample(job: Job) -> None:
    """Sample train and test sequences (at a tuned beta, verified on the data set, unless beta is
    given) and store them with their diagnostics, resuming from the job's checkpoint
    (``workflow_lib.runtime.checkpoints``: the single chains' blocks and finished calls).

    Datasets: ``train: (n_train, L) uint8``, ``test: (n_test, L) uint8``, ``J``, ``U``,
    ``saved_energy: (n_train + n_test,)``, ``energy_acf``, ``burn_in_energy: (burn_in,
    n_monitor)``, ``split_position``, ``test_in_train: (n_test,)``; ``attempts/beta``,
    ``attempts/hamming``, ``attempts/round: (A,)`` every production sample (wall times: attr
    ``attempt_seconds``; the kept one: attr ``beta``);
    when tuned, ``tuning/betas``, ``tuning/hamming``, ``tuning/hamming_sem: (rounds, K)`` and
    ``tuning/estimate: (rounds,)``;
    for parallel tempering ``tempering/ladder: (R,)``, ``tempering/swap_acceptance: (R-1,)``.
    """
    p = job.params
    cpl = read_artefact(job.input["couplings"], POTTS_COUPLINGS, required=("J", "U"))
    J, U = cpl["J"], cpl["U"]
    key = stage_key(p["seed"], "sample", p["realisation"])
    sampling, given = sampling_options(p["sampling"]), p["potts"]["beta"]
    tc = tuning_options(p["beta_tuning"]) if given is None else None  # only to tune beta
    protocol = sampling.protocol.name
    try:
        data, tuning, attempts = sample_to_target(key, J, U, given, sampling, tc)
    except TuningError as exc:
        raise StageError(f"sample r{p['realisation']}: {exc}") from None
    beta = data.beta
    extra: dict[str, np.ndarray] = {
        "attempts/beta": np.array([a.beta for a in attempts]),
        "attempts/hamming": np.array([a.hamming for a in attempts]),
        "attempts/round": np.array([a.round for a in attempts]),
    }
    if tuning is not None:
        extra |= {"tuning/betas": tuning.betas, "tuning/hamming": tuning.hamming,
                  "tuning/hamming_sem": tuning.sem, "tuning/estimate": tuning.estimate}
    attrs = {"attempt_seconds": np.array([a.seconds for a in attempts])}  # wall time: not data
    if tuning is not None:
        attrs |= {"target_hamming": tc.target_hamming, "tolerance": tc.tolerance,
                  "tuning_seconds": tuning.seconds}
    if protocol == "parallel_tempering":
        extra |= {"tempering/ladder": data.extra["ladder"],
                  "tempering/swap_acceptance": data.extra["swap_acceptance"]}
        attrs["round_trips"] = int(data.extra["round_trips"])
    in_train = float(data.test_in_train.mean())
    log.info(
        "sampled %d + %d sequences at beta %.4f: mean Hamming %.3f, tau_int %.2f sweeps, "
        "ESS %.0f, optimal test loss %.4f nats; %d / %d distinct train / test sequences",
        len(data.train), len(data.test), beta, data.mean_hamming, data.tau_int_sweeps, data.ess,
        data.optimal_test_loss, data.n_distinct_train, data.n_distinct_test,
    )
    if in_train > 0.5:
        log.warning(
            "%.0f%% of the test sequences also occur in the training set: test losses are mostly "
            "in-sample (raise beta_tuning.target_hamming, potts.L or sampling.sweeps_between)",
            100 * in_train,
        )
    dtype = np.uint8 if U.shape[0] <= 256 else np.int32
    write_artefact(
        job.output["samples"], POTTS_SAMPLES,
        {
            "train": data.train.astype(dtype), "test": data.test.astype(dtype),
            "J": J, "U": U, "saved_energy": data.saved_energy, "energy_acf": data.energy_acf,
            "burn_in_energy": data.burn_in_energy, "split_position": data.position,
            "test_in_train": data.test_in_train, **extra,
        },
        p, seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={
            "beta": beta, "beta_tuned": tuning is not None, "protocol": protocol,
            "hamming_pairs": PROTOCOLS[protocol],
            "mean_hamming": data.mean_hamming, "attempts": len(attempts),
            "tau_int_sweeps": data.tau_int_sweeps,
            "ess": data.ess, "optimal_test_loss": data.optimal_test_loss,
            "n_distinct_train": data.n_distinct_train, "n_distinct_test": data.n_distinct_test,
            "test_in_train_fraction": in_train,
            "split": "random permutation of the saved configurations into train and test",
            **attrs,
        },
    )
