"""Posterior samples of the network weights with NumPyro's NUTS, as in Tiberi et al. 2024.

The weight posterior of the theory in its path form: priors N(0, σ²) on ``a: (N,)`` and
``V^(l): (H_l, N, N)``, a unit normal ``V0: (N, N0)`` (σ0 lives inside Φ), likelihood
``Y ~ N(f, T)`` with ``f = Σ_π (V0ᵀ ū^π)·Φ_:π``. With ``integrate_v0`` the Gaussian integral over
``V0`` is done exactly (then ``Y ~ N(0, K_U + T I)`` with ``U = ū ūᵀ``) and NUTS samples
``(a, V^(l))`` only; the test predictor of a draw is then its exact conditional mean. This is
the same posterior, far better conditioned at small T; without it NUTS samples every weight
as the paper's code does. In its hot loop the integrated model builds ``K_U`` from the
precomputed path-path kernels (Π² P² numbers: 160 000 for the HMC task) rather than through Φ,
which makes ``K_U`` O(Π² P²) instead of O(P² N0 Π) per gradient. Weights have sign and rotation
symmetries, so the chains are judged on invariant quantities: the order parameters (R-hat over
chains, effective sample size), plus NUTS's acceptance and divergences.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import NUTS

from workflow_lib.attention import model, theory
from workflow_lib.config import schema_default

log = logging.getLogger("workflow_lib.attention")


def weight_posterior(
    phi: jax.Array,
    y: jax.Array,
    path_kernels: jax.Array | None,
    *,
    heads: Sequence[int],
    N: int,
    T: float,
    sigma2: float,
) -> None:
    """NumPyro model of the weights given the training set ``phi: (P, N0, Pi)``, ``y: (P,)``;
    ``V0`` is integrated out when the training set's ``path_kernels: (Pi, Pi, P, P)`` are given
    (``model.path_kernels``)."""
    sd = float(np.sqrt(sigma2))
    a = numpyro.sample("a", dist.Normal(0.0, sd).expand([N]).to_event(1))
    values = [
        numpyro.sample(f"V{layer + 1}", dist.Normal(0.0, sd).expand([h, N, N]).to_event(3))
        for layer, h in enumerate(heads)
    ]
    ubar = model.suffix_vectors(a, values)[0]
    if path_kernels is not None:
        K = jnp.einsum("pq,pqab->ab", ubar @ ubar.T, path_kernels)
        numpyro.factor("y", -0.5 * theory.kernel_energy(K, y, T))
    else:
        V0 = numpyro.sample("V0", dist.Normal(0.0, 1.0).expand([N, phi.shape[1]]).to_event(2))
        numpyro.sample(
            "y", dist.Normal(model.readout(phi, ubar @ V0), float(np.sqrt(T))).to_event(1), obs=y
        )


@dataclass(frozen=True)
class Samples:
    """Invariant summaries of ``C`` chains x ``S`` draws: ``order_parameters[l]: (C, S, m, m)``
    (``U^(1), ..., U^(L)``, then ``U_a`` as ``(C, S, 1, 1)``); ``mean_weights: (C, Pi, N0)``, the
    per-chain posterior mean of the effective weights (the mean predictor is
    ``model.readout(Φ, W̄)``); per chain ``accept``, ``divergences``, ``mean_steps`` (leapfrog
    steps per draw); ``rhat``/``ess``: max R-hat and min ESS over order-parameter entries."""

    order_parameters: list[np.ndarray]
    mean_weights: np.ndarray
    accept: np.ndarray
    divergences: np.ndarray
    mean_steps: np.ndarray
    rhat: float
    ess: float
    warmup_seconds: float
    sampling_seconds: float

    def accuracy(self, phi: jax.Array, y: jax.Array) -> tuple[float, np.ndarray]:
        """Accuracy on ``phi: (n, N0, Pi)``, ``y: (n,)`` of the posterior-mean predictor of all
        chains, and of each chain's, ``(C,)``."""
        per_chain = np.array([theory.accuracy(model.readout(phi, W), y)
                              for W in self.mean_weights])
        return float(self.correct(phi, y).mean()), per_chain

    def correct(self, phi: jax.Array, y: jax.Array) -> np.ndarray:
        """Per input of ``phi: (n, N0, Pi)``, whether the posterior-mean predictor of all chains
        has the sign of ``y: (n,)``: ``(n,)`` bool."""
        mean = model.readout(phi, self.mean_weights.mean(axis=0))
        return np.sign(np.asarray(mean)) == np.asarray(y)

    def datasets(self, accuracy_per_chain: np.ndarray) -> dict[str, np.ndarray]:
        """The artefact's datasets: ``U/{l}: (C, S, m, m)``, ``ua: (C, S)``, ``mean_weights``,
        and per chain ``accuracy_per_chain``, ``accept``, ``divergences``, ``mean_steps``."""
        *us, ua = self.order_parameters
        return {**{f"U/{layer + 1}": u for layer, u in enumerate(us)}, "ua": ua[..., 0, 0],
                "mean_weights": self.mean_weights, "accuracy_per_chain": accuracy_per_chain,
                "accept": self.accept, "divergences": self.divergences,
                "mean_steps": self.mean_steps}


def _summaries(
    draws: dict, phi: jax.Array, y: jax.Array, layers: int, T: float, integrate_v0: bool
) -> tuple[list[jax.Array], jax.Array]:
    """Order parameters ``(C, S, m, m)`` and per-chain mean effective weights ``(C, Pi, N0)``."""

    def one(d: dict) -> tuple[list[jax.Array], jax.Array]:
        us = model.suffix_vectors(d["a"], [d[f"V{layer + 1}"] for layer in range(layers)])
        ops = [u @ u.T for u in us] + [(d["a"] @ d["a"] / d["a"].shape[0]).reshape(1, 1)]
        W = theory.mean_weights(ops[0], phi, y, T) if integrate_v0 else us[0] @ d["V0"]
        return ops, W

    def chain(d: dict) -> tuple[list[jax.Array], jax.Array]:
        ops, W = jax.lax.map(one, d, batch_size=32)
        return ops, W.mean(axis=0)

    return jax.jit(jax.vmap(chain))(draws)


def run_nuts(
    key: jax.Array,
    phi: jax.Array,
    y: jax.Array,
    heads: Sequence[int],
    N: int,
    T: float,
    sigma2: float = schema_default("paths.prior_variance"),
    integrate_v0: bool = schema_default("paths.sampler.integrate_v0"),
    warmup: int = schema_default("paths.sampler.warmup"),
    samples: int = schema_default("paths.sampler.samples"),
    chains: int = schema_default("paths.sampler.chains"),
    target_accept: float = schema_default("paths.sampler.target_accept"),
    max_tree_depth: int = schema_default("paths.sampler.max_tree_depth"),
    blocks: int = 5,
) -> Samples:
    """NUTS on the weight posterior, chains vectorised; logs rate and ETA per block of steps.

    Defaults: the config's ``paths.prior_variance`` and ``paths.sampler`` (the Omniglot study
    passes its own ``omniglot.sampler``).

    NumPyro's NUTS kernel is stepped by one compiled ``lax.scan`` over ``samples / blocks``
    steps (warmup adaptation runs inside the kernel for the first ``warmup`` steps; the last
    warmup block may add a few discarded post-adaptation steps). Returns the invariant
    summaries (``Samples``), not the weights. All sites have real support, so the kernel's
    positions are the weights.
    """
    heads = tuple(heads)
    kernel = NUTS(
        partial(weight_posterior, heads=heads, N=N, T=T, sigma2=sigma2),
        target_accept_prob=target_accept,
        max_tree_depth=max_tree_depth,
    )
    model_args = (phi, y, model.path_kernels(phi) if integrate_v0 else None)
    # one compiled program: NumPyro's eager initialisation compiles op by op, which is slower;
    # it keeps no traced value
    states = jax.jit(lambda keys, args: kernel.init(keys, warmup, model_args=args))(
        jax.random.split(key, chains), model_args)
    block = -(-samples // blocks)

    @jax.jit
    def run_block(states, model_args):
        def step(state, _):
            state = kernel.sample(state, model_args, {})
            return state, (state.z, state.diverging, state.accept_prob, state.num_steps)

        return jax.lax.scan(step, states, None, length=block)

    dim = sum(heads) * N * N + N + (0 if integrate_v0 else N * phi.shape[1])
    log.info(
        "NUTS N=%d: %d sampled weights (V0 %s), %d chains, %d warmup + %d draws",
        N,
        dim,
        "integrated out" if integrate_v0 else "sampled",
        chains,
        warmup,
        samples,
    )
    out, start = [], time.perf_counter()
    n_warm = -(-warmup // block)
    for b in range(n_warm + -(-samples // block)):
        states, collected = run_block(states, model_args)
        jax.block_until_ready(states)
        elapsed = time.perf_counter() - start
        if b < n_warm:
            log.info(
                "warmup %d/%d steps per chain, %.1f steps/s, step size %s",
                min((b + 1) * block, warmup),
                warmup,
                (b + 1) * block / elapsed,
                np.round(np.asarray(states.adapt_state.step_size), 4),
            )
            warm, start = (elapsed, time.perf_counter()) if b == n_warm - 1 else (0.0, start)
            continue
        out.append(collected)
        done = min(len(out) * block, samples)
        rate = done / elapsed
        log.info(
            "%d/%d draws per chain, %.1f draws/s, ETA %.0f s",
            done,
            samples,
            rate,
            (samples - done) / rate,
        )
    sampling = time.perf_counter() - start
    z, diverging, accept, steps = (
        jax.tree.map(
            lambda *parts: jnp.swapaxes(jnp.concatenate(parts), 0, 1)[:, :samples],
            *[c[i] for c in out],
        )
        for i in range(4)
    )
    ops, weights = _summaries(z, phi, y, len(heads), T, integrate_v0)
    flat = np.concatenate([np.asarray(o).reshape(chains, samples, -1) for o in ops], axis=2)
    rhat = float(np.max(split_gelman_rubin(flat))) if chains > 1 else float("nan")
    ess = float(np.min(effective_sample_size(flat)))
    accept, divergences = np.asarray(accept).mean(axis=1), np.asarray(diverging).sum(axis=1)
    steps = np.asarray(steps).mean(axis=1)
    log.info(
        "acceptance %s, divergences %s, steps/draw %s, max R-hat %.3f, min ESS %.0f",
        np.round(accept, 3),
        divergences,
        np.round(steps, 1),
        rhat,
        ess,
    )
    return Samples(
        order_parameters=[np.asarray(o) for o in ops],
        mean_weights=np.asarray(weights),
        accept=accept,
        divergences=divergences,
        mean_steps=steps,
        rhat=rhat,
        ess=ess,
        warmup_seconds=warm,
        sampling_seconds=sampling,
    )
