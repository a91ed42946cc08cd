"""Data sets from the generalised Potts model: sampling protocols, beta tuning, verification and
the diagnostics of a data set (Rende et al. 2024, App. A; design: ``docs/design/beta_tuning.md``).

Beta tuning works on the statistic of the production protocol itself: pilot runs use the
production burn-in and spacing (``sampling.burn_in``, ``sampling.sweeps_between``) and only save
fewer configurations (``beta_tuning.pilot_samples``). The mean normalised Hamming distance is
measured over all pairs of saved configurations (``PROTOCOLS`` says which pairs for each
protocol). Each round runs ``grid_points`` betas x ``pilot_chains`` replicate pilots in one
batched call; the points of all rounds are pooled, made non-increasing in beta by a weighted
isotonic fit, and beta is interpolated (in log beta) where that fit crosses the target. The next
round's grid is centred on the estimate and spans 1.5x the current bracket, so a bracket that
noise put on the wrong side is corrected (re-bracketing).

Verification: production runs in rounds of ``beta_tuning.candidates`` full-length runs batched in
one call, at betas log-spaced around the estimate (neighbours one ``tolerance`` apart in the
expected distance) and each with its own random numbers. Every data set's own mean Hamming
distance is measured; the one closest to the target is kept when it is within ``tolerance``.
Otherwise the next round is centred where the isotonic fit of all attempts crosses the target
once they bracket it, else a Newton step in log beta from the closest attempt (slope: the secant
of the last two attempts, else the pilot points), at most ``beta_tuning.resamples`` more rounds; a
final miss raises ``TuningError``. (Why rounds of fresh draws: in the glassy regime a single
chain's distance depends on the valleys it visits over its whole span, which pilots do not see,
and jumps with the random numbers at fixed beta; on the paper's L = C = 20 between about 0.27 and
0.55. The candidates are draws of that spread near the right beta; all are recorded.)
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.potts import diagnostics, gibbs, model, tempering
from workflow_lib.sequences import in_training_set, n_distinct

log = logging.getLogger("workflow_lib.sampling")

PROTOCOLS = {
    "single_chain": "one chain; Hamming distance over all pairs of its saved configurations "
    "(within-chain)",
    "independent_chains": "one final configuration per independent chain; Hamming distance over "
    "all pairs of them (across chains)",
    "parallel_tempering": "one replica-exchange run, configurations saved at the target beta; "
    "Hamming distance over all pairs of them (within-run)",
}

MAX_LOG_STEP = 0.5  # largest Newton correction of log beta after a missed target


class TuningError(ValueError):
    """Beta tuning or its verification failed; the message is one line for the user."""


@dataclass(frozen=True)
class Run:
    """K runs of a protocol: ``saved: (K, n_save, L)``, ``burn_in_energy: (K, burn_in,
    n_monitor)``, ``extra``: protocol diagnostics, name -> ``(K, ...)``."""

    saved: np.ndarray
    burn_in_energy: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)


def run_protocol(
    keys: jax.Array, J: np.ndarray, U: np.ndarray, betas: np.ndarray, cfg: dict, *,
    n_save: int, blocks: int = 1,
) -> Run:
    """Run ``cfg['protocol']`` once per ``(keys[k], betas[k])``, ``keys: (K,)``, ``betas: (K,)``,
    with the burn-in, spacing and ladder of the ``sampling`` config ``cfg``."""
    betas = np.atleast_1d(np.asarray(betas, dtype=np.float64))
    K, protocol = betas.shape[0], cfg["protocol"]
    if protocol == "single_chain":
        saved, trace = gibbs.single_chain(
            keys, jnp.broadcast_to(J, (K, *J.shape)),
            jnp.broadcast_to(U, (K, *U.shape)), jnp.asarray(betas), n_save=n_save,
            burn_in=cfg["burn_in"], sweeps_between=cfg["sweeps_between"], blocks=blocks,
        )
        return Run(saved, trace[..., None])
    if protocol == "independent_chains":
        runs = [
            gibbs.independent_chains(
                k, jnp.asarray(J), jnp.asarray(U), b, n_chains=n_save, n_sweeps=cfg["burn_in"],
                blocks=blocks,
            )
            for k, b in zip(keys, betas, strict=True)
        ]
        return Run(np.stack([r[0] for r in runs]), np.stack([r[1] for r in runs]))
    if protocol == "parallel_tempering":
        pt = tempering.parallel_tempering(
            keys, jnp.asarray(J), jnp.asarray(U), jnp.asarray(betas),
            n_replicas=cfg["replicas"], ladder_min=cfg["ladder_min"], n_save=n_save,
            burn_in=cfg["burn_in"], sweeps_between=cfg["sweeps_between"], blocks=blocks,
        )
        extra = {"ladder": pt.betas, "swap_acceptance": pt.swap_acceptance,
                 "round_trips": pt.round_trips}
        return Run(pt.saved, pt.burn_in_energy[..., None], extra)
    raise ValueError(f"unknown protocol {protocol!r}; allowed: {', '.join(PROTOCOLS)}")


# ------------------------------------------------------------------ tuning


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


def _pilots(key, J, U, betas: np.ndarray, sampling_cfg: dict, n_rep: int, n_save: int):
    """Mean Hamming distance and its s.e.m. over ``n_rep`` replicate pilots at each of
    ``betas: (K,)``, all ``K n_rep`` runs in one batched call."""
    K = betas.shape[0]
    keys = jax.random.split(key, K * n_rep)
    run = run_protocol(keys, J, U, np.repeat(betas, n_rep), sampling_cfg, n_save=n_save)
    raw = np.array([model.mean_pairwise_hamming(s) for s in run.saved]).reshape(K, n_rep)
    sem = raw.std(axis=1, ddof=1) / np.sqrt(n_rep) if n_rep > 1 else np.full(K, np.nan)
    return raw.mean(axis=1), sem


def tune_beta(
    key: jax.Array, J: np.ndarray, U: np.ndarray, sampling_cfg: dict, cfg: dict,
) -> Tuning:
    """Find beta whose production-protocol mean Hamming distance is ``cfg['target_hamming']``
    (see module doc). ``cfg``: the ``beta_tuning`` section. Raises ``TuningError`` when the
    first round does not bracket the target within ``[beta_min, beta_max]``."""
    target, K, n_rep = cfg["target_hamming"], cfg["grid_points"], cfg["pilot_chains"]
    lo, hi = cfg["beta_min"], cfg["beta_max"]
    start = time.perf_counter()
    rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    estimates: list[float] = []
    for r in range(cfg["rounds"]):
        grid = np.geomspace(lo, hi, K)
        mean, sem = _pilots(jax.random.fold_in(key, r), J, U, grid, sampling_cfg, n_rep,
                            cfg["pilot_samples"])
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


# ------------------------------------------------------------------ data sets


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
    for ``train: (n, L)``, ``test: (m, L)`` (``workflow_lib.sequences``)."""
    return n_distinct(train), n_distinct(test), in_training_set(train, test)


def draw_datasets(
    keys: list[jax.Array], J: np.ndarray, U: np.ndarray, betas: np.ndarray, cfg: dict,
) -> list[Dataset]:
    """One data set per ``(keys[k], betas[k])``, all runs in one batched call: sample
    ``n_train + n_test`` configurations with the ``sampling`` config ``cfg`` and split them at
    random (a permutation from the key) into train and test."""
    pairs = [jax.random.split(k) for k in keys]
    n = cfg["n_train"] + cfg["n_test"]
    run = run_protocol(jnp.stack([k_run for k_run, _ in pairs]), J, U, np.asarray(betas), cfg,
                       n_save=n, blocks=cfg["blocks"])
    out = []
    for i, ((_, k_split), beta) in enumerate(zip(pairs, np.atleast_1d(betas), strict=True)):
        saved, trace = run.saved[i], run.burn_in_energy[i]
        saved_energy = np.asarray(model.energy(jnp.asarray(saved), jnp.asarray(J),
                                               jnp.asarray(U)))
        position = np.asarray(jax.random.permutation(k_split, n))
        train, test = saved[position[: cfg["n_train"]]], saved[position[cfg["n_train"] :]]
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


def sample_to_target(
    key: jax.Array, J: np.ndarray, U: np.ndarray, beta: float | None, sampling_cfg: dict,
    tuning_cfg: dict,
) -> tuple[Dataset, Tuning | None, list[Attempt]]:
    """The sample stage's science: a data set at ``beta``, or, when ``beta`` is None, at a tuned
    beta whose data set is verified to hit the target (see module doc).

    Each production round runs ``beta_tuning.candidates`` full-length runs at once, at betas
    spread around the estimate (``candidate_betas``) and with their own random numbers; the data
    set is the one closest to the target when it is within ``tolerance``. Returns ``(data,
    tuning or None, every production attempt)``; raises ``TuningError`` when no attempt of the
    last allowed round is within ``tolerance`` of ``target_hamming``.
    """
    if beta is not None:
        start = time.perf_counter()
        (data,) = draw_datasets([key], J, U, np.array([beta]), sampling_cfg)
        return data, None, [Attempt(beta, data.mean_hamming, time.perf_counter() - start)]
    target, tol, k = (tuning_cfg[n] for n in ("target_hamming", "tolerance", "candidates"))
    tuning = tune_beta(jax.random.fold_in(key, 1 << 20), J, U, sampling_cfg, tuning_cfg)
    center, attempts = tuning.beta, []
    pilot_slope = dhamming_dlogbeta(tuning, []) if k > 1 else None  # spacing of the candidates
    for a in range(tuning_cfg["resamples"] + 1):
        betas = np.array([center]) if k == 1 else candidate_betas(center, pilot_slope, tol, k)
        keys = [key if i == 0 else jax.random.fold_in(key, i) for i in range(a * k, a * k + k)]
        start = time.perf_counter()
        sets = draw_datasets(keys, J, U, betas, sampling_cfg)
        seconds = (time.perf_counter() - start) / k
        attempts += [Attempt(d.beta, d.mean_hamming, seconds, a) for d in sets]
        best = min(sets, key=lambda d: abs(d.mean_hamming - target))
        log.info("round %d: beta %s -> data set Hamming %s (target %.3f +- %.3f)", a + 1,
                 np.array2string(betas, precision=4),
                 np.array2string(np.array([d.mean_hamming for d in sets]), precision=4),
                 target, tol)
        if abs(best.mean_hamming - target) <= tol:
            return best, tuning, attempts
        if a < tuning_cfg["resamples"]:
            center = next_beta(tuning, attempts, target)
    closest = min(attempts, key=lambda t: abs(t.hamming - target))
    lo, hi = min(t.beta for t in attempts), max(t.beta for t in attempts)
    raise TuningError(
        f"no data set within {tol} of the target mean Hamming distance {target} after "
        f"{len(attempts)} attempt(s) in {a + 1} round(s) at beta {lo:.4f}..{hi:.4f} "
        f"(closest: beta {closest.beta:.4f} -> "
        f"{closest.hamming:.4f}, {closest.hamming - target:+.4f}); raise "
        "beta_tuning.candidates, beta_tuning.resamples or beta_tuning.tolerance"
    )
