"""Autocorrelation time and effective sample size against AR(1) closed forms."""

import numpy as np

from workflow_lib.potts import diagnostics


def ar1(phi: float, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    noise = rng.normal(size=n)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + noise[t]
    return x


def test_tau_of_ar1_matches_closed_form():
    phi = 0.8  # tau = (1 + phi) / (2 (1 - phi)) = 4.5
    tau = diagnostics.integrated_autocorr_time(ar1(phi, 200_000))
    assert abs(tau - 4.5) < 0.3


def test_independent_draws_have_full_ess():
    x = np.random.default_rng(1).normal(size=20_000)
    assert abs(diagnostics.integrated_autocorr_time(x) - 0.5) < 0.05
    assert diagnostics.effective_sample_size(x) > 18_000


def test_constant_series_is_handled():
    assert diagnostics.integrated_autocorr_time(np.ones(100)) == 0.5
