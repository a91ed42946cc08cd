"""Posterior samples of the network of Tiberi et al. 2024 with NumPyro's NUTS.

The weight posterior of the theory in its path form: priors N(0, σ²) on ``a: (N,)`` and
``V^(l): (H_l, N, N)``, a unit normal ``V0: (N, N0)`` (σ0 lives inside Φ), likelihood
``Y ~ N(f, T)`` with ``f = Σ_π (V0ᵀ ū^π)·Φ_:π``. What NUTS samples (``VARIABLES``):

- ``weights``: every weight, as the paper's code does;
- ``values``: ``(a, V^(l))``, with the Gaussian integral over ``V0`` done exactly (then
  ``Y ~ N(0, K_U + T I)`` with ``U = ū ūᵀ``);
- ``order_parameters``: every weight integrated out. Given the layer above, the suffix vectors
  of layer l are Gaussian, so ``U_a = |a|²/N ~ σ² χ²_N / N`` and each ``U^(l)`` is Wishart with
  N degrees of freedom and scale ``σ²/N · I_{H_l} ⊗ U^(l+1)`` (``U^(L+1) = U_a``); the
  likelihood depends on ``U^(1)`` only. NUTS samples the Bartlett decomposition of each level
  (``bartlett_factors``: χ² diagonals and unit normals below them, also when N is smaller than
  the level's dimension), about Π²/2 numbers whatever N: the same posterior of the order
  parameters and of the predictor as the two others, at a cost that does not grow with N.

In all three the test predictor of a draw is its exact conditional mean given ``U^(1)``
(``weights``: given V0 too). The integrated models build ``K_U`` from the precomputed path-path
kernels (Π² P² numbers: 160 000 for the HMM task), O(Π² P²) instead of O(P² N0 Π) per
gradient. Chains are judged on invariant quantities (weights have sign and rotation
symmetries): the order parameters (R-hat over chains, effective sample size), plus NUTS's
acceptance and divergences.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import NUTS

from workflow_lib.attention import model, theory
from workflow_lib.core.config import schema_default

log = logging.getLogger("workflow_lib.attention")


VARIABLES = ("order_parameters", "values", "weights")  # what NUTS samples, from fewest


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
        _kernel_likelihood(ubar @ ubar.T, path_kernels, y, T)
    else:
        V0 = numpyro.sample("V0", dist.Normal(0.0, 1.0).expand([N, phi.shape[1]]).to_event(2))
        numpyro.sample(
            "y", dist.Normal(model.readout(phi, ubar @ V0), float(np.sqrt(T))).to_event(1), obs=y
        )


def _kernel_likelihood(U: jax.Array, path_kernels: jax.Array, y: jax.Array, T: float) -> None:
    """The marginal likelihood ``Y ~ N(0, K_U + T I)`` of order parameter ``U: (Pi, Pi)``."""
    K = jnp.einsum("pq,pqab->ab", U, path_kernels)
    numpyro.factor("y", -0.5 * theory.kernel_energy(K, y, T))


def bartlett_shapes(heads: Sequence[int], N: int) -> list[tuple[int, int]]:
    """``(d, r)`` of each level's Bartlett factor, from the readout (``U_a``) down to layer 1:
    a level of ``H`` heads under a factor of ``k`` columns has ``d = H k`` rows and
    ``r = min(d, N)`` columns."""
    shapes, k = [], 1
    for h in (1, *reversed(tuple(heads))):
        shapes.append((h * k, min(h * k, N)))
        k = shapes[-1][1]
    return shapes


def _below(d: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the entries below the diagonal of a ``(d, r)`` matrix."""
    return np.tril_indices(d, -1, r)


def bartlett_factors(
    chi2: Sequence[jax.Array], normal: Sequence[jax.Array], heads: Sequence[int], N: int,
    sigma2: float,
) -> list[jax.Array]:
    """Factors ``F`` with ``U = F Fᵀ`` of ``[U_a, U^(L), ..., U^(1)]`` from the Bartlett
    variables of each level (``bartlett_shapes``: ``chi2[i]: (r,)`` with ``chi2[i][j] ~ χ²_{N-j}``,
    ``normal[i]``: the unit normals below the diagonal of the ``(d, r)`` factor, row-major).

    Level by level ``F ← sqrt(σ²/N) (I_H ⊗ F) R`` with ``R`` the lower-trapezoidal Bartlett
    factor, so ``F Fᵀ ~ Wishart_N(σ²/N I_H ⊗ F_above F_aboveᵀ)``: the law of the order
    parameters under the prior of the weights, also when ``N < d`` (then rank N)."""
    F = jnp.ones((1, 1))
    out = []
    for h, (d, r), c, z in zip((1, *reversed(tuple(heads))), bartlett_shapes(heads, N), chi2,
                               normal, strict=True):
        R = jnp.zeros((d, r)).at[_below(d, r)].set(z).at[np.arange(r), np.arange(r)].set(
            jnp.sqrt(c))
        F = np.sqrt(sigma2 / N) * jnp.kron(jnp.eye(h), F) @ R
        out.append(F)
    return out


def order_parameter_posterior(
    path_kernels: jax.Array,
    y: jax.Array,
    *,
    heads: Sequence[int],
    N: int,
    T: float,
    sigma2: float,
) -> None:
    """NumPyro model of the order parameters (every weight integrated out) given the training
    set's ``path_kernels: (Pi, Pi, P, P)`` and ``y: (P,)``: the Bartlett variables of each level
    (``bartlett_factors``), likelihood ``Y ~ N(0, K_U + T I)`` with ``U = U^(1)``."""
    chi2, normal = [], []
    for level, (d, r) in enumerate(bartlett_shapes(heads, N)):
        chi2.append(numpyro.sample(f"chi2_{level}", dist.Chi2(N - jnp.arange(r)).to_event(1)))
        normal.append(numpyro.sample(
            f"normal_{level}", dist.Normal(0.0, 1.0).expand([len(_below(d, r)[0])]).to_event(1)))
    F = bartlett_factors(chi2, normal, heads, N, sigma2)[-1]
    _kernel_likelihood(F @ F.T, path_kernels, y, T)


def sampled_dimension(variables: str, heads: Sequence[int], N: int, n0: int) -> int:
    """How many numbers NUTS samples per draw."""
    if variables == "order_parameters":
        return sum(r + len(_below(d, r)[0]) for d, r in bartlett_shapes(heads, N))
    return sum(heads) * N * N + N + (N * n0 if variables == "weights" else 0)


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
    draws: dict, phi: jax.Array, y: jax.Array, heads: tuple[int, ...], N: int, T: float,
    sigma2: float, variables: str,
) -> tuple[list[jax.Array], jax.Array]:
    """Order parameters ``(C, S, m, m)`` and per-chain mean effective weights ``(C, Pi, N0)``."""
    layers = len(heads)

    def one(d: dict) -> tuple[list[jax.Array], jax.Array]:
        if variables == "order_parameters":
            factors = bartlett_factors([d[f"chi2_{i}"] for i in range(layers + 1)],
                                       [d[f"normal_{i}"] for i in range(layers + 1)],
                                       heads, N, sigma2)
            ops = [F @ F.T for F in reversed(factors)]
        else:
            us = model.suffix_vectors(d["a"], [d[f"V{layer + 1}"] for layer in range(layers)])
            ops = [u @ u.T for u in us] + [(d["a"] @ d["a"] / N).reshape(1, 1)]
        W = us[0] @ d["V0"] if variables == "weights" else theory.mean_weights(ops[0], phi, y, T)
        return ops, W

    def chain(d: dict) -> tuple[list[jax.Array], jax.Array]:
        ops, W = jax.lax.map(one, d, batch_size=32)
        return ops, W.mean(axis=0)

    return jax.jit(jax.vmap(chain))(draws)


@cache
def _nuts_programs(variables: str, heads: tuple[int, ...], N: int, T: float, sigma2: float,
                   target_accept: float, max_tree_depth: int, warmup: int, block: int,
                   signature: tuple) -> tuple[NUTS, Callable, Callable]:
    """The NUTS kernel of a posterior and its two programs for the chains' keys and data of
    ``signature`` (``_signature``): ``init(keys, model_args)``, compiled ahead of time for
    exactly that signature (NumPyro's ``init`` wraps the kernel's step in a ``vmap`` over the
    chains each time it is traced, so it is traced once per kernel), and ``run_block(states,
    model_args)``, ``block`` kernel steps in one ``lax.scan``. The data are the programs'
    arguments, so that a process sampling several realisations of one shape traces them once."""
    posterior = order_parameter_posterior if variables == "order_parameters" else weight_posterior
    kernel = NUTS(
        partial(posterior, heads=heads, N=N, T=T, sigma2=sigma2),
        target_accept_prob=target_accept,
        max_tree_depth=max_tree_depth,
    )

    @jax.jit
    def run_block(states, model_args):
        def step(state, _):
            state = kernel.sample(state, model_args, {})
            return state, (state.z, state.diverging, state.accept_prob, state.num_steps)

        return jax.lax.scan(step, states, None, length=block)

    leaves, tree = signature
    init = jax.jit(lambda keys, args: kernel.init(keys, warmup, model_args=args))
    return kernel, init.lower(*jax.tree.unflatten(tree, leaves)).compile(), run_block


def _signature(tree: object) -> tuple:
    """The shapes and dtypes of ``tree``'s arrays and its structure: a hashable key."""
    leaves, structure = jax.tree.flatten(tree)
    return tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in leaves), structure


def run_nuts(
    key: jax.Array,
    phi: jax.Array,
    y: jax.Array,
    heads: Sequence[int],
    N: int,
    T: float,
    sigma2: float = schema_default("paths.prior_variance"),
    variables: str = schema_default("paths.sampler.variables"),
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
    summaries (``Samples``), not the draws; ``variables`` (``VARIABLES``) says what NUTS
    samples. The kernel's positions are the draws in NumPyro's unconstrained space (the χ²
    variables as logarithms), mapped back before the summaries.
    """
    heads = tuple(heads)
    if variables not in VARIABLES:
        raise ValueError(f"variables = {variables!r}: NUTS samples one of {VARIABLES}")
    block = -(-samples // blocks)
    kernels = None if variables == "weights" else model.path_kernels(phi)
    model_args = (kernels, y) if variables == "order_parameters" else (phi, y, kernels)
    keys = jax.random.split(key, chains)
    kernel, init, run_block = _nuts_programs(variables, heads, N, T, sigma2, target_accept,
                                             max_tree_depth, warmup, block,
                                             _signature((keys, model_args)))
    states = init(keys, model_args)

    log.info(
        "NUTS N=%d: %d sampled numbers (%s), %d chains, %d warmup + %d draws",
        N,
        sampled_dimension(variables, heads, N, phi.shape[1]),
        variables.replace("_", " "),
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
    z = jax.vmap(jax.vmap(kernel.postprocess_fn(model_args, {})))(z)
    ops, weights = _summaries(z, phi, y, heads, N, T, sigma2, variables)
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
