"""Data sets from the generalised Potts model: couplings, beta tuning, sampling protocols and
their diagnostics (spec §1.2-1.4).

Beta tuning: the mean normalised Hamming distance is measured over **all pairs of saved
configurations of a pilot run of the production protocol** — within one chain for
``single_chain`` (the paper's protocol), across chains for ``independent_chains``. Each round
runs ``grid_points`` pilot chains at log-spaced betas in one batched call (common random
numbers), keeps the bracket where the distance crosses the target, and the final beta
interpolates linearly in log beta inside the last bracket.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.potts import diagnostics, gibbs, model

log = logging.getLogger("workflow_lib.sampling")

HAMMING_PAIRS = {
    "single_chain": "all pairs of saved configurations of one chain (within-chain)",
    "independent_chains": "all pairs of final configurations of independent chains",
}


def run_protocol(
    keys: jax.Array, J: np.ndarray, U: np.ndarray, betas: np.ndarray, protocol: str, *,
    n_save: int, burn_in: int, sweeps_between: int, blocks: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``protocol`` once per ``(keys[k], betas[k])``, ``keys: (K,)``, ``betas: (K,)``.

    Returns ``(saved: (K, n_save, L) int, burn_in_energy: (K, burn_in, n_monitor))``.
    """
    betas = np.atleast_1d(np.asarray(betas, dtype=np.float64))
    K = betas.shape[0]
    if protocol == "single_chain":
        saved, trace = gibbs.single_chain(
            keys, jnp.broadcast_to(J, (K, *J.shape)),
            jnp.broadcast_to(U, (K, *U.shape)), jnp.asarray(betas), n_save=n_save,
            burn_in=burn_in, sweeps_between=sweeps_between, blocks=blocks,
        )
        return saved, trace[..., None]
    if protocol == "independent_chains":
        runs = [
            gibbs.independent_chains(
                k, jnp.asarray(J), jnp.asarray(U), b, n_chains=n_save, n_sweeps=burn_in,
                blocks=blocks,
            )
            for k, b in zip(keys, betas, strict=True)
        ]
        return np.stack([r[0] for r in runs]), np.stack([r[1] for r in runs])
    raise ValueError(f"unknown protocol {protocol!r}; allowed: {', '.join(HAMMING_PAIRS)}")


@dataclass(frozen=True)
class Tuning:
    """Result of beta tuning: ``beta`` and every pilot point ``(betas, hamming): (rounds, K)``."""

    beta: float
    betas: np.ndarray
    hamming: np.ndarray


def decreasing_fit(y: np.ndarray) -> np.ndarray:
    """Least-squares non-increasing fit of ``y: (K,)`` (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight]
    for v in np.asarray(y, dtype=np.float64):
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            (m2, w2), (m1, w1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
    return np.concatenate([np.full(int(w), m) for m, w in blocks])


def tune_beta(key: jax.Array, J: np.ndarray, U: np.ndarray, protocol: str, cfg: dict) -> Tuning:
    """Find beta with mean pairwise Hamming distance ``cfg['target_hamming']`` (see module doc).

    ``cfg``: the ``beta_tuning`` config section. Each grid point averages ``pilot_chains``
    pilot runs; the distances of a round are made non-increasing in beta (glassy chains are
    noisy) before the crossing is located. Raises ``ValueError`` when the target is not
    bracketed by ``[beta_min, beta_max]``.
    """
    target, lo, hi = cfg["target_hamming"], cfg["beta_min"], cfg["beta_max"]
    K, n_rep = cfg["grid_points"], cfg["pilot_chains"]
    all_betas, all_hd = [], []
    for r in range(cfg["rounds"]):
        betas = np.geomspace(lo, hi, K)
        keys = jax.random.split(jax.random.fold_in(key, r), n_rep)
        saved, _ = run_protocol(
            jnp.tile(keys, K), J, U, np.repeat(betas, n_rep), protocol,
            n_save=cfg["pilot_samples"], burn_in=cfg["pilot_burn_in"],
            sweeps_between=cfg["pilot_sweeps_between"],
        )
        raw = np.array([model.mean_pairwise_hamming(s) for s in saved])
        hd = decreasing_fit(raw.reshape(K, n_rep).mean(axis=1))
        all_betas.append(betas)
        all_hd.append(hd)
        log.info("beta tuning round %d: beta %s -> Hamming %s", r + 1,
                 np.array2string(betas, precision=3), np.array2string(hd, precision=3))
        if r == 0 and not (hd[0] >= target >= hd[-1]):
            raise ValueError(
                f"target Hamming distance {target} is not bracketed by beta in [{lo}, {hi}] "
                f"(distances {hd[0]:.3f} .. {hd[-1]:.3f}); widen beta_tuning.beta_min/beta_max"
            )
        below = np.nonzero(hd <= target)[0]
        k = int(below[0]) if below.size else len(betas) - 1
        k = max(k, 1)
        lo, hi = betas[k - 1], betas[k]
        h_lo, h_hi = hd[k - 1], hd[k]
    w = 0.5 if h_lo == h_hi else float(np.clip((h_lo - target) / (h_lo - h_hi), 0.0, 1.0))
    beta = float(np.exp((1 - w) * np.log(lo) + w * np.log(hi)))
    return Tuning(beta, np.stack(all_betas), np.stack(all_hd))


@dataclass(frozen=True)
class Dataset:
    """Train/test sequences and diagnostics of one realisation.

    ``train: (n_train, L)``, ``test: (n_test, L)`` int; ``saved_energy: (n_save,)`` in chain
    order; ``burn_in_energy: (burn_in, n_monitor)``; ``position: (n_save,)`` the index in the
    saved sequence of each row of ``concat(train, test)``.
    """

    train: np.ndarray
    test: np.ndarray
    saved_energy: np.ndarray
    burn_in_energy: np.ndarray
    position: np.ndarray
    tau_int_sweeps: float
    ess: float
    mean_hamming: float
    optimal_test_loss: float


def draw_dataset(
    key: jax.Array, J: np.ndarray, U: np.ndarray, beta: float, cfg: dict,
) -> Dataset:
    """Sample ``n_train + n_test`` configurations with the ``sampling`` config ``cfg`` and split
    them at random (a permutation from ``key``) into train and test."""
    k_run, k_split = jax.random.split(key)
    n = cfg["n_train"] + cfg["n_test"]
    saved, trace = run_protocol(
        k_run[None], J, U, np.array([beta]), cfg["protocol"], n_save=n, burn_in=cfg["burn_in"],
        sweeps_between=cfg["sweeps_between"], blocks=cfg["blocks"],
    )
    saved, trace = saved[0], trace[0]
    saved_energy = np.asarray(model.energy(jnp.asarray(saved), jnp.asarray(J), jnp.asarray(U)))
    position = np.asarray(jax.random.permutation(k_split, n))
    train, test = saved[position[: cfg["n_train"]]], saved[position[cfg["n_train"] :]]
    half = trace[trace.shape[0] // 2 :]
    tau = diagnostics.integrated_autocorr_time(half) if half.shape[0] > 2 else float("nan")
    return Dataset(
        train=train,
        test=test,
        saved_energy=saved_energy,
        burn_in_energy=trace,
        position=position,
        tau_int_sweeps=tau,
        ess=diagnostics.effective_sample_size(saved_energy) if n > 2 else float(n),
        mean_hamming=model.mean_pairwise_hamming(saved),
        optimal_test_loss=float(model.optimal_loss(jnp.asarray(test), J, U, beta)),
    )
