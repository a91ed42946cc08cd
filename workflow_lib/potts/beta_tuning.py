"""Beta tuning by pilot runs (Rende et al. 2024, App. A; design: ``docs/design/beta_tuning.md``):
the beta whose production-protocol mean Hamming distance is the target.

Beta tuning works on the statistic of the production protocol itself: pilot runs use the
production burn-in and spacing (``sampling.burn_in``, ``sampling.sweeps_between``) and only save
fewer configurations (``beta_tuning.pilot_samples``). The mean normalised Hamming distance is
measured over all pairs of saved configurations (``protocols.PROTOCOLS`` says which pairs for
each protocol). Each round runs ``grid_points`` betas x ``pilot_chains`` replicate pilots in one
batched call; the points of all rounds are pooled, made non-increasing in beta by a weighted
isotonic fit, and beta is interpolated (in log beta) where that fit crosses the target. The next
round's grid is centred on the estimate and spans 1.5x the current bracket, so a bracket that
noise put on the wrong side is corrected (re-bracketing). The data sets at the tuned beta are
verified by ``verified_sampling``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import jax
import numpy as np

from workflow_lib.potts import model
from workflow_lib.potts.protocols import ProtocolOptions, run_protocol

log = logging.getLogger("workflow_lib.potts")


class TuningError(ValueError):
    """Beta tuning or its verification failed; the message is one line for the user."""


@dataclass(frozen=True)
class TuningOptions:
    """The beta tuning's hyperparameters, built by the caller (the sample stage from its
    ``beta_tuning`` config section):

    - pilots (``tune_beta``): the ``target_hamming`` mean Hamming distance, bracketed in
      ``[beta_min, beta_max]`` by the first of ``rounds`` rounds of ``grid_points`` betas x
      ``pilot_chains`` replicate pilot runs of ``pilot_samples`` saved configurations each;
    - production (``verified_sampling.sample_to_target``): rounds of ``candidates`` full-length
      runs, the first and ``resamples`` more, then ``fallback_rounds`` rounds of
      ``fallback_candidates``, until a data set is within ``tolerance`` of the target.
    """

    target_hamming: float
    beta_min: float
    beta_max: float
    grid_points: int
    rounds: int
    pilot_samples: int
    pilot_chains: int
    tolerance: float
    resamples: int
    fallback_rounds: int
    fallback_candidates: int
    candidates: int


@dataclass(frozen=True)
class Tuning:
    """Every pilot round: grid ``betas``, mean ``hamming`` and its ``sem`` over the replicate
    pilots, all ``(rounds, K)``; the running ``estimate: (rounds,)``; the final ``beta``; wall
    time in ``seconds``."""

    beta: float
    betas: np.ndarray
    hamming: np.ndarray
    sem: np.ndarray
    estimate: np.ndarray
    seconds: float


def decreasing_fit(y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Weighted least-squares non-increasing fit of ``y: (K,)`` (pool adjacent violators)."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, wt in zip(y, w, strict=True):
        blocks.append([v, wt, 1])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            (m2, w2, n2), (m1, w1, n1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return np.concatenate([np.full(n, m) for m, _, n in blocks])


def crossing(betas: np.ndarray, hamming: np.ndarray, target: float):
    """Where the isotonic (non-increasing) fit of the points ``(betas, hamming)`` crosses
    ``target``: ``(beta, lo, hi)`` interpolated in log beta between the neighbouring points
    ``lo < beta <= hi`` on either side, or ``None`` when the fit stays on one side."""
    order = np.argsort(betas, kind="stable")
    b, fit = np.asarray(betas)[order], decreasing_fit(np.asarray(hamming)[order])
    below = np.nonzero(fit <= target)[0]
    if below.size == 0 or below[0] == 0:
        return None
    k = int(below[0])
    lo, hi, f_lo, f_hi = b[k - 1], b[k], fit[k - 1], fit[k]
    w = (f_lo - target) / (f_lo - f_hi)  # in (0, 1]: f_lo > target >= f_hi
    return float(np.exp((1 - w) * np.log(lo) + w * np.log(hi))), float(lo), float(hi)


def _pilots(key, J, U, betas: np.ndarray, protocol: ProtocolOptions, n_rep: int, n_save: int):
    """Mean Hamming distance and its s.e.m. over ``n_rep`` replicate pilots of ``protocol``,
    ``n_save`` saved configurations each, at each of ``betas: (K,)``, all ``K n_rep`` runs in
    one batched call."""
    K = betas.shape[0]
    keys = jax.random.split(key, K * n_rep)
    run = run_protocol(keys, J, U, np.repeat(betas, n_rep), protocol, n_save=n_save, blocks=1)
    raw = np.array([model.mean_pairwise_hamming(s) for s in run.saved]).reshape(K, n_rep)
    sem = raw.std(axis=1, ddof=1) / np.sqrt(n_rep) if n_rep > 1 else np.full(K, np.nan)
    return raw.mean(axis=1), sem


def tune_beta(
    key: jax.Array, J: np.ndarray, U: np.ndarray, protocol: ProtocolOptions,
    tuning: TuningOptions,
) -> Tuning:
    """Find beta whose mean Hamming distance under the production ``protocol`` is
    ``tuning.target_hamming`` on the couplings ``J: (L, L)``, ``U: (C, C)`` (see module doc;
    ``tuning``: the pilots' options). Raises ``TuningError`` when the first round does not
    bracket the target within ``[beta_min, beta_max]``."""
    target, K, n_rep = tuning.target_hamming, tuning.grid_points, tuning.pilot_chains
    lo, hi = tuning.beta_min, tuning.beta_max
    start = time.perf_counter()
    rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    estimates: list[float] = []
    for r in range(tuning.rounds):
        grid = np.geomspace(lo, hi, K)
        mean, sem = _pilots(jax.random.fold_in(key, r), J, U, grid, protocol, n_rep,
                            tuning.pilot_samples)
        rounds.append((grid, mean, sem))
        pooled_b = np.concatenate([g for g, _, _ in rounds])
        pooled_h = np.concatenate([h for _, h, _ in rounds])
        found = crossing(pooled_b, pooled_h, target)
        log.info("beta tuning round %d: beta %s -> Hamming %s", r + 1,
                 np.array2string(grid, precision=3), np.array2string(mean, precision=3))
        if found is None:
            if r == 0:
                raise TuningError(
                    f"target Hamming distance {target} is not bracketed by beta in "
                    f"[{lo:.4g}, {hi:.4g}] (pilot distances {mean.max():.3f} .. "
                    f"{mean.min():.3f}); widen beta_tuning.beta_min/beta_max"
                )
            # noise moved the pooled fit off the target: re-bracket around the last estimate
            lo, hi = estimates[-1] / (hi / lo), estimates[-1] * (hi / lo)
            estimates.append(estimates[-1])
            continue
        beta, b_lo, b_hi = found
        estimates.append(beta)
        half = 0.75 * np.log(b_hi / b_lo)
        lo, hi = beta * np.exp(-half), beta * np.exp(half)
        log.info("beta tuning round %d: estimate %.4f, bracket [%.4f, %.4f]", r + 1, beta,
                 b_lo, b_hi)
    return Tuning(estimates[-1], *(np.stack(x) for x in zip(*rounds, strict=True)),
                  np.array(estimates), time.perf_counter() - start)
