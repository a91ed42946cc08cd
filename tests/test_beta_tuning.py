"""Beta tuning verified on the data it produces, its root finder, and the held-out statistics."""

import jax
import numpy as np
import pytest

from workflow_lib.potts import beta_tuning, datasets, model, verified_sampling
from workflow_lib.potts.verified_sampling import Attempt
from workflow_lib.studies.potts_paper.stages_data import sampling_options, tuning_options

TUNING = dict(target_hamming=0.5, tolerance=0.02, beta_min=0.1, beta_max=5.0, grid_points=6,
              rounds=3, pilot_chains=4, pilot_samples=30, resamples=2, candidates=1,
              fallback_rounds=0, fallback_candidates=16)
SAMPLING = dict(n_train=300, n_test=100, burn_in=100, sweeps_between=10, blocks=1, replicas=4,
                ladder_min=0.3)


@pytest.mark.parametrize(
    ("protocol", "candidates"),
    [("single_chain", 4), ("independent_chains", 1), ("parallel_tempering", 1)],
)
@pytest.mark.slow
def test_tuned_data_hit_the_target_within_tolerance(protocol, candidates):
    J, U = model.draw_couplings(jax.random.key(1), 8, 4, "gaussian")
    sampling = sampling_options(SAMPLING | {"protocol": protocol})
    data, tuning, attempts = verified_sampling.sample_to_target(
        jax.random.key(9), J, U, None, sampling,
        tuning_options(TUNING | {"candidates": candidates}))
    assert abs(data.mean_hamming - 0.5) <= 0.02
    # the verification measures the data set itself
    saved = np.concatenate([data.train, data.test])
    assert data.mean_hamming == pytest.approx(model.mean_pairwise_hamming(saved))
    # the data set is the last round's attempt closest to the target
    last = [a for a in attempts if a.round == attempts[-1].round]
    assert len(last) == candidates and 1 <= len(attempts) <= 3 * candidates
    best = min(last, key=lambda a: abs(a.hamming - 0.5))
    assert (best.beta, best.hamming) == (data.beta, data.mean_hamming)
    assert tuning.betas.shape == tuning.hamming.shape == tuning.sem.shape == (3, 6)
    assert data.train.shape == (300, 8) and data.test.shape == (100, 8)


@pytest.mark.slow
def test_a_given_beta_is_the_first_production_round_of_the_tuned_route():
    """Given and tuned beta take one route: the data set at a given beta is, to the last bit,
    the tuned route's first production attempt at that beta with the same key."""
    J, U = model.draw_couplings(jax.random.key(1), 6, 3, "gaussian")
    sampling = sampling_options(SAMPLING | {"protocol": "single_chain"})
    tuned, _, attempts = verified_sampling.sample_to_target(
        jax.random.key(9), J, U, None, sampling,
        tuning_options(TUNING | {"tolerance": 1.0, "rounds": 1}))
    given, tuning, (attempt,) = verified_sampling.sample_to_target(
        jax.random.key(9), J, U, tuned.beta, sampling, tuning_options(TUNING))
    assert tuning is None and (attempt.beta, attempt.round) == (tuned.beta, 0)
    np.testing.assert_array_equal(given.train, tuned.train)
    np.testing.assert_array_equal(given.test, tuned.test)
    assert given.mean_hamming == tuned.mean_hamming == attempts[0].hamming


@pytest.mark.slow
def test_a_miss_after_the_last_round_raises_one_line():
    J, U = model.draw_couplings(jax.random.key(1), 8, 4, "gaussian")
    sampling = sampling_options(SAMPLING | {"protocol": "single_chain"})
    with pytest.raises(beta_tuning.TuningError,
                       match=r"no data set within 1e-09 of .* after 2 attempt\(s\) in 1 round"):
        verified_sampling.sample_to_target(
            jax.random.key(9), J, U, None, sampling,
            tuning_options(TUNING | {"tolerance": 1e-9, "resamples": 0, "candidates": 2}))


@pytest.mark.slow
def test_fallback_rounds_run_only_after_a_miss_with_fresh_draws():
    """A data set that meets its target in the rounds of candidates is the same to the last bit
    with fallback rounds configured; after a miss, the fallback rounds run with their own
    candidates and random numbers, and a miss after them names every attempt."""
    J, U = model.draw_couplings(jax.random.key(1), 8, 4, "gaussian")
    sampling = sampling_options(SAMPLING | {"protocol": "single_chain"})
    easy = TUNING | {"tolerance": 1.0, "candidates": 2}
    plain, _, _ = verified_sampling.sample_to_target(jax.random.key(9), J, U, None, sampling,
                                                     tuning_options(easy))
    backed, _, _ = verified_sampling.sample_to_target(
        jax.random.key(9), J, U, None, sampling, tuning_options(easy | {"fallback_rounds": 2}))
    np.testing.assert_array_equal(plain.train, backed.train)
    assert plain.beta == backed.beta
    tight = TUNING | {"tolerance": 1e-9, "resamples": 0, "candidates": 2, "fallback_rounds": 1,
                      "fallback_candidates": 3}
    with pytest.raises(beta_tuning.TuningError,
                       match=r"after 5 attempt\(s\) in 2 round\(s\).*fallback_rounds"):
        verified_sampling.sample_to_target(jax.random.key(9), J, U, None, sampling,
                                           tuning_options(tight))


def test_candidate_betas_are_one_tolerance_apart_within_the_largest_step():
    betas = verified_sampling.candidate_betas(2.0, -0.5, 0.02, 4)
    np.testing.assert_allclose(np.diff(np.log(betas)), 0.04)  # 0.02 / 0.5
    assert np.log(betas).mean() == pytest.approx(np.log(2.0))
    flat = verified_sampling.candidate_betas(2.0, -1e-4, 0.02, 5)  # spread capped at MAX_LOG_STEP
    assert np.log(flat[-1] / flat[0]) == pytest.approx(2 * verified_sampling.MAX_LOG_STEP)
    assert verified_sampling.candidate_betas(2.0, -0.5, 0.02, 1).tolist() == [2.0]


@pytest.mark.slow
def test_unbracketed_target_is_reported():
    J, U = model.draw_couplings(jax.random.key(7), 6, 3, "gaussian")
    sampling = sampling_options(SAMPLING | {"protocol": "independent_chains", "burn_in": 10})
    with pytest.raises(beta_tuning.TuningError, match="not bracketed"):
        beta_tuning.tune_beta(jax.random.key(8), J, U, sampling.protocol, tuning_options(
            TUNING | {"beta_min": 0.01, "beta_max": 0.02, "rounds": 1}))


def test_crossing_interpolates_inside_the_bracket():
    # noisy, non-monotone points: the isotonic fit pools 0.40/0.45 into 0.425 at beta 1 and 2
    betas = np.array([0.5, 1.0, 2.0, 4.0])
    beta, lo, hi = beta_tuning.crossing(betas, np.array([0.6, 0.40, 0.45, 0.1]), 0.3)
    assert (lo, hi) == (2.0, 4.0)
    w = (0.425 - 0.3) / (0.425 - 0.1)
    assert beta == pytest.approx(np.exp((1 - w) * np.log(2.0) + w * np.log(4.0)))
    assert lo < beta < hi
    assert beta_tuning.crossing(betas, np.array([0.6, 0.5, 0.45, 0.4]), 0.3) is None
    assert beta_tuning.crossing(betas, np.array([0.2, 0.1, 0.1, 0.0]), 0.3) is None


def test_decreasing_fit():
    np.testing.assert_allclose(beta_tuning.decreasing_fit(np.array([3.0, 1.0, 2.0, 0.0])),
                               [3.0, 1.5, 1.5, 0.0])
    np.testing.assert_allclose(
        beta_tuning.decreasing_fit(np.array([1.0, 2.0]), np.array([3.0, 1.0])), [1.25, 1.25]
    )


def test_newton_correction_and_slope():
    assert verified_sampling.corrected_beta(1.0, 0.4, 0.3, -0.5) == pytest.approx(np.exp(0.2))
    assert verified_sampling.corrected_beta(1.0, 0.9, 0.3, -0.1) == pytest.approx(
        np.exp(verified_sampling.MAX_LOG_STEP))
    grid = np.geomspace(0.5, 2.0, 5)
    tuning = beta_tuning.Tuning(1.0, grid[None], 0.3 - 0.2 * np.log(grid)[None],
                                np.zeros((1, 5)), np.ones(1), 0.0)
    assert verified_sampling.dhamming_dlogbeta(tuning, []) == pytest.approx(-0.2)
    attempts = [Attempt(1.0, 0.4, 0.0), Attempt(np.e, 0.1, 0.0)]
    assert verified_sampling.dhamming_dlogbeta(tuning, attempts) == pytest.approx(-0.3)
    rising = [Attempt(1.0, 0.1, 0.0), Attempt(np.e, 0.4, 0.0)]
    assert verified_sampling.dhamming_dlogbeta(tuning, rising) == pytest.approx(-0.2)


def test_next_round_steps_from_the_closest_candidate_with_a_slope_across_rounds():
    """Candidates of one round at (nearly) one beta give no secant: the step takes the pilot
    slope, from the attempt closest to the target."""
    grid = np.geomspace(0.5, 2.0, 5)
    tuning = beta_tuning.Tuning(1.0, grid[None], 0.3 - 0.2 * np.log(grid)[None],
                                np.zeros((1, 5)), np.ones(1), 0.0)
    one_round = [Attempt(1.0, 0.45, 0.0, 0), Attempt(1.0 + 1e-9, 0.40, 0.0, 0)]
    assert verified_sampling.next_beta(tuning, one_round, 0.35) == pytest.approx(np.exp(0.25))
    two_rounds = [*one_round, Attempt(np.e, 0.37, 0.0, 1),
                  Attempt(np.e**2, 0.6, 0.0, 1)]  # secant of the rounds' best: -0.03
    assert verified_sampling.next_beta(tuning, two_rounds, 0.35) == pytest.approx(
        np.exp(1 + verified_sampling.MAX_LOG_STEP))


def test_overlap_counts_distinct_and_shared_sequences():
    train = np.array([[0, 1], [0, 1], [1, 1]])
    test = np.array([[0, 1], [2, 2], [2, 2], [1, 1]])
    n_train, n_test, in_train = datasets.overlap(train, test)
    assert (n_train, n_test) == (2, 3)
    np.testing.assert_array_equal(in_train, [True, False, False, True])


def test_next_beta_interpolates_once_attempts_bracket_the_target():
    tuning = beta_tuning.Tuning(1.0, np.geomspace(0.5, 2.0, 5)[None], np.zeros((1, 5)),
                                np.zeros((1, 5)), np.ones(1), 0.0)
    attempts = [Attempt(1.0, 0.6, 0.0), Attempt(2.0, 0.2, 0.0)]
    beta = verified_sampling.next_beta(tuning, attempts, 0.5)
    assert beta == pytest.approx(np.exp(0.25 * np.log(2.0)))  # a quarter of the way in log beta
