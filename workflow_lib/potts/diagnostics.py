"""MCMC diagnostics: integrated autocorrelation time and effective sample size."""

from __future__ import annotations

import numpy as np


def autocorrelation(x: np.ndarray) -> np.ndarray:
    """Normalised autocorrelation function of ``x: (T,)`` (or the mean ACF of the columns of
    ``x: (T, K)``), via FFT; ``rho[0] = 1``. A constant series gives ``rho = [1, 0, 0, ...]``."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    T = x.shape[0]
    x = x - x.mean(axis=0)
    f = np.fft.rfft(x, n=2 * T, axis=0)
    acov = np.fft.irfft(f * np.conj(f), axis=0)[:T].mean(axis=1)
    if acov[0] <= 0:
        out = np.zeros(T)
        out[0] = 1.0
        return out
    return acov / acov[0]


def integrated_autocorr_time(x: np.ndarray, window_factor: float = 5.0) -> float:
    """Integrated autocorrelation time ``tau = 1/2 + sum_{t>=1} rho(t)`` in units of the series'
    step, with Sokal's automatic window (smallest W with ``W >= window_factor * tau(W)``).
    ``tau = 1/2`` for independent draws."""
    rho = autocorrelation(x)
    taus = np.cumsum(rho) - 0.5
    window = np.arange(len(rho)) >= window_factor * taus
    W = int(np.argmax(window)) if window.any() else len(rho) - 1
    return float(max(taus[W], 0.5))


def effective_sample_size(x: np.ndarray) -> float:
    """``n / (2 tau)`` for a series of ``n`` draws (``n`` when they are independent)."""
    n = np.asarray(x).shape[0]
    return float(n / (2.0 * integrated_autocorr_time(x)))
