"""Data sets from the generalised Potts model: train/test sequences of one realisation, sampled
by a protocol (``protocols``) at a given beta with the sizes of a ``SamplingOptions``, with the
diagnostics of the data set."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.potts import diagnostics, model
from workflow_lib.potts.protocols import ProtocolOptions, run_protocol
from workflow_lib.potts.sequences import in_training_set, n_distinct


@dataclass(frozen=True)
class SamplingOptions:
    """How a data set is sampled, built by the caller (the sample stage from its ``sampling``
    config section): by ``protocol``, ``n_train`` training and ``n_test`` test sequences, each
    run in ``blocks`` blocks of sweeps (a log line each)."""

    protocol: ProtocolOptions
    n_train: int
    n_test: int
    blocks: int


@dataclass(frozen=True)
class Dataset:
    """Train/test sequences, sampled at ``beta``, and diagnostics of one realisation.

    ``train: (n_train, L)``, ``test: (n_test, L)`` int; ``saved_energy: (n_save,)`` in chain
    order and ``energy_acf: (min(n_save, 200),)`` its autocorrelation (lags in saves);
    ``burn_in_energy: (burn_in, n_monitor)``; ``position: (n_save,)`` the index in the saved
    sequence of each row of ``concat(train, test)``; ``test_in_train: (n_test,)`` whether each
    test sequence also occurs in the training set; ``extra``: protocol diagnostics.
    """

    beta: float
    train: np.ndarray
    test: np.ndarray
    saved_energy: np.ndarray
    energy_acf: np.ndarray
    burn_in_energy: np.ndarray
    position: np.ndarray
    test_in_train: np.ndarray
    n_distinct_train: int
    n_distinct_test: int
    tau_int_sweeps: float
    ess: float
    mean_hamming: float
    optimal_test_loss: float
    extra: dict[str, np.ndarray]


def overlap(train: np.ndarray, test: np.ndarray) -> tuple[int, int, np.ndarray]:
    """``(distinct training sequences, distinct test sequences, test_in_train: (n_test,) bool)``
    for ``train: (n, L)``, ``test: (m, L)`` (``workflow_lib.potts.sequences``)."""
    return n_distinct(train), n_distinct(test), in_training_set(train, test)


def draw_datasets(
    keys: list[jax.Array], J: np.ndarray, U: np.ndarray, betas: np.ndarray,
    sampling: SamplingOptions,
) -> list[Dataset]:
    """One data set per ``(keys[k], betas[k])``, ``betas: (K,)``, on the couplings
    ``J: (L, L)``, ``U: (C, C)``, all runs in one batched call: sample ``n_train + n_test``
    configurations as ``sampling`` says and split them at random (a permutation from the key)
    into train and test."""
    pairs = [jax.random.split(k) for k in keys]
    n_train = sampling.n_train
    n = n_train + sampling.n_test
    run = run_protocol(jnp.stack([k_run for k_run, _ in pairs]), J, U, np.asarray(betas),
                       sampling.protocol, n_save=n, blocks=sampling.blocks)
    out = []
    for i, ((_, k_split), beta) in enumerate(zip(pairs, np.atleast_1d(betas), strict=True)):
        saved, trace = run.saved[i], run.burn_in_energy[i]
        saved_energy = np.asarray(model.energy(jnp.asarray(saved), jnp.asarray(J),
                                               jnp.asarray(U)))
        position = np.asarray(jax.random.permutation(k_split, n))
        train, test = saved[position[:n_train]], saved[position[n_train:]]
        n_train_distinct, n_test_distinct, in_train = overlap(train, test)
        half = trace[trace.shape[0] // 2 :]
        tau = diagnostics.integrated_autocorr_time(half) if half.shape[0] > 2 else float("nan")
        out.append(Dataset(
            beta=float(beta),
            train=train,
            test=test,
            saved_energy=saved_energy,
            energy_acf=diagnostics.autocorrelation(saved_energy)[:200],
            burn_in_energy=trace,
            position=position,
            test_in_train=in_train,
            n_distinct_train=n_train_distinct,
            n_distinct_test=n_test_distinct,
            tau_int_sweeps=tau,
            ess=diagnostics.effective_sample_size(saved_energy) if n > 2 else float(n),
            mean_hamming=model.mean_pairwise_hamming(saved),
            optimal_test_loss=float(model.optimal_loss(jnp.asarray(test), J, U, float(beta))),
            extra={k: v[i] for k, v in run.extra.items()},
        ))
    return out
