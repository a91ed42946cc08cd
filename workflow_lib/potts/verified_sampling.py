"""The sample stage's science: a data set at a given beta, or at a tuned beta (``beta_tuning``)
whose own mean Hamming distance is verified to hit the target (design:
``docs/design/beta_tuning.md``).

Verification: production runs in rounds of ``beta_tuning.candidates`` full-length runs batched in
one call, at betas log-spaced around the estimate (neighbours one ``tolerance`` apart in the
expected distance) and each with its own random numbers. Every data set's own mean Hamming
distance is measured; the one closest to the target is kept when it is within ``tolerance``.
Otherwise the next round is centred where the isotonic fit of all attempts crosses the target
once they bracket it, else a Newton step in log beta from the closest attempt (slope: the secant
of the last two attempts, else the pilot points), at most ``beta_tuning.resamples`` more rounds;
then, only after those all missed, ``beta_tuning.fallback_rounds`` rounds of
``beta_tuning.fallback_candidates`` runs each, centred alike (a data set that met the target
before them is the same with or without them); a final miss raises ``TuningError``. (Why rounds
of fresh draws: in the glassy regime a single chain's distance depends on the valleys it visits
over its whole span, which pilots do not see, and jumps with the random numbers at fixed beta; on
the paper's L = C = 20 between about 0.27 and 0.55. The candidates are draws of that spread near
the right beta; all are recorded.)
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import jax
import numpy as np

from workflow_lib.potts.beta_tuning import Tuning, TuningError, TuningOptions, crossing, tune_beta
from workflow_lib.potts.datasets import Dataset, SamplingOptions, draw_datasets

log = logging.getLogger("workflow_lib.potts")

MAX_LOG_STEP = 0.5  # largest Newton correction of log beta after a missed target


@dataclass(frozen=True)
class Attempt:
    """One production sample: its ``beta``, the data set's measured ``hamming``, wall time in
    ``seconds`` (its share of the batched call), and the ``round`` of candidates it belongs to."""

    beta: float
    hamming: float
    seconds: float
    round: int = 0


def candidate_betas(center: float, slope: float, tolerance: float, k: int) -> np.ndarray:
    """``k`` betas around ``center``, log-spaced so that neighbours differ by ``tolerance`` in
    the expected distance (``slope``: d Hamming / d log beta), the whole spread within
    ``MAX_LOG_STEP`` either side: ``(k,)``, ``center`` itself when ``k == 1``."""
    step = min(tolerance / abs(slope), 2 * MAX_LOG_STEP / max(k - 1, 1))
    return center * np.exp(step * (np.arange(k) - (k - 1) / 2))


def dhamming_dlogbeta(tuning: Tuning, attempts: list[Attempt]) -> float:
    """Slope of the mean Hamming distance in log beta near the estimate: the secant of the last
    two production attempts (in rounds of candidates: the closest to the target of each of the
    last two rounds, ``next_beta``) when they are apart in beta and give a decreasing one, else a
    least-squares line through the pilot points within ``MAX_LOG_STEP`` of the estimate, else
    through all pilot points."""
    if len(attempts) >= 2 and abs(np.log(attempts[-1].beta / attempts[-2].beta)) > 1e-3:
        a, b = attempts[-2], attempts[-1]
        secant = (b.hamming - a.hamming) / np.log(b.beta / a.beta)
        if secant < 0:
            return float(secant)
    b, h = tuning.betas.ravel(), tuning.hamming.ravel()
    near = np.abs(np.log(b / tuning.beta)) <= MAX_LOG_STEP
    for x, y in ((b[near], h[near]), (b, h)):
        if x.size >= 2 and np.ptp(x) > 0:
            slope = np.polyfit(np.log(x), y, 1)[0]
            if slope < 0:
                return float(slope)
    raise TuningError(
        "the pilot Hamming distance does not decrease with beta; raise beta_tuning.pilot_samples "
        "or beta_tuning.pilot_chains"
    )


def corrected_beta(beta: float, measured: float, target: float, slope: float) -> float:
    """Newton step in log beta from a measured data-set distance, at most ``MAX_LOG_STEP``."""
    step = np.clip((target - measured) / slope, -MAX_LOG_STEP, MAX_LOG_STEP)
    return float(beta * np.exp(step))


def next_beta(tuning: Tuning, attempts: list[Attempt], target: float) -> float:
    """The centre of the next production round: interpolated where the attempts' own distances
    cross the target once they bracket it, else a Newton step from the attempt closest to it."""
    found = crossing(np.array([t.beta for t in attempts]),
                     np.array([t.hamming for t in attempts]), target)
    if found is not None:
        return found[0]

    def closest(ts: list[Attempt]) -> Attempt:
        return min(ts, key=lambda t: abs(t.hamming - target))

    rounds = [closest([t for t in attempts if t.round == r]) for r in
              sorted({t.round for t in attempts})]
    best = closest(attempts)
    return corrected_beta(best.beta, best.hamming, target, dhamming_dlogbeta(tuning, rounds))


def production_round(
    key: jax.Array, J: np.ndarray, U: np.ndarray, betas: np.ndarray, a: int,
    sampling: SamplingOptions, first: int | None = None,
) -> tuple[list[Dataset], list[Attempt]]:
    """Round ``a`` (0, 1, ...) of production: one full-length data set (``sampling``) per beta
    of ``betas: (k,)`` on the couplings ``J: (L, L)``, ``U: (C, C)``, all in one batched call,
    each with its own random numbers (its key folded from ``key`` by its index ``first + i``,
    ``first`` by default ``a k``: the attempts before it in rounds of ``k``; the first of round
    0 is ``key`` itself), and its attempt. A given beta is round 0 with one candidate."""
    k = len(betas)
    first = a * k if first is None else first
    keys = [key if i == 0 else jax.random.fold_in(key, i) for i in range(first, first + k)]
    start = time.perf_counter()
    sets = draw_datasets(keys, J, U, betas, sampling)
    seconds = (time.perf_counter() - start) / k
    return sets, [Attempt(d.beta, d.mean_hamming, seconds, a) for d in sets]


def sample_to_target(
    key: jax.Array, J: np.ndarray, U: np.ndarray, beta: float | None,
    sampling: SamplingOptions, tuning: TuningOptions | None,
) -> tuple[Dataset, Tuning | None, list[Attempt]]:
    """The sample stage's science: a data set (``sampling``) on the couplings ``J: (L, L)``,
    ``U: (C, C)`` at ``beta``, or, when ``beta`` is None, at a tuned beta (``tuning``, then
    required; unused otherwise) whose data set is verified to hit the target (see module doc).
    Both run their data sets through ``production_round``: a given beta is round 0 with one
    candidate.

    Each production round runs ``tuning.candidates`` full-length runs at once, at betas
    spread around the estimate (``candidate_betas``) and with their own random numbers; the data
    set is the one closest to the target when it is within ``tolerance``. Returns ``(data, the
    pilots' Tuning or None, every production attempt)``; raises ``TuningError`` when no attempt
    of the last allowed round is within ``tolerance`` of ``target_hamming``.
    """
    if beta is not None:
        (data,), attempts = production_round(key, J, U, np.array([beta]), 0, sampling)
        return data, None, attempts
    target, tol = tuning.target_hamming, tuning.tolerance
    pilots = tune_beta(jax.random.fold_in(key, 1 << 20), J, U, sampling.protocol, tuning)
    center, attempts = pilots.beta, []
    rounds = ([tuning.candidates] * (tuning.resamples + 1)
              + [tuning.fallback_candidates] * tuning.fallback_rounds)
    # the spacing of the candidates
    pilot_slope = dhamming_dlogbeta(pilots, []) if max(rounds) > 1 else None
    for a, k in enumerate(rounds):
        betas = np.array([center]) if k == 1 else candidate_betas(center, pilot_slope, tol, k)
        sets, made = production_round(key, J, U, betas, a, sampling, len(attempts))
        attempts += made
        best = min(sets, key=lambda d: abs(d.mean_hamming - target))
        log.info("round %d%s: beta %s -> data set Hamming %s (target %.3f +- %.3f)", a + 1,
                 " (fallback)" if a > tuning.resamples else "",
                 np.array2string(betas, precision=4),
                 np.array2string(np.array([d.mean_hamming for d in sets]), precision=4),
                 target, tol)
        if abs(best.mean_hamming - target) <= tol:
            return best, pilots, attempts
        if a < len(rounds) - 1:
            center = next_beta(pilots, attempts, target)
    closest = min(attempts, key=lambda t: abs(t.hamming - target))
    lo, hi = min(t.beta for t in attempts), max(t.beta for t in attempts)
    raise TuningError(
        f"no data set within {tol} of the target mean Hamming distance {target} after "
        f"{len(attempts)} attempt(s) in {a + 1} round(s) at beta {lo:.4f}..{hi:.4f} "
        f"(closest: beta {closest.beta:.4f} -> "
        f"{closest.hamming:.4f}, {closest.hamming - target:+.4f}); raise "
        "beta_tuning.candidates, beta_tuning.resamples, beta_tuning.fallback_rounds or "
        "beta_tuning.tolerance"
    )
