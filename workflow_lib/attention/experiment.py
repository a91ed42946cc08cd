"""One experiment of the hidden-Markov-chain task (Tiberi et al. 2024, Fig. 2), end to end:
its networks, the path-attended inputs of every network, the theory's width sweep and the GP
lines (the task: ``tasks.MarkovTask``).

A network is a tuple of layers, each a tuple of head names; ``all`` is the experiment's network,
the others are its GP-line sub-networks (``designs.EXPERIMENTS``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.attention import designs, model, theory

log = logging.getLogger("workflow_lib.attention")

Network = tuple[tuple[str, ...], ...]


def networks(experiment: str) -> dict[str, Network]:
    """``all`` (the experiment's network) and its GP-line sub-networks."""
    ex = designs.EXPERIMENTS[experiment]
    return {"all": ex.network, **ex.gp_lines}


def layer_heads(network: Sequence[Sequence[str]]) -> tuple[int, ...]:
    """Heads per layer of ``network``."""
    return tuple(len(layer) for layer in network)


def network_features(
    x: jax.Array, heads: Mapping[str, jax.Array], nets: Mapping[str, Network],
    readout: jax.Array, sigma2: float,
) -> dict[str, jax.Array]:
    """Path-attended inputs ``(B, N0, Pi)`` of every network on sequences ``x: (B, T, N0)``;
    each head's attention map is computed once and shared by the networks that use it."""
    used = sorted({h for layers in nets.values() for layer in layers for h in layer})
    maps = {h: model.attention_maps(x, heads[h][None]) for h in used}  # (B, 1, T, T)
    return {
        net: model.path_features(
            x, [jnp.concatenate([maps[h] for h in layer], axis=1) for layer in layers],
            readout, sigma2,
        )
        for net, layers in nets.items()
    }


def width_sweep(
    phi: jax.Array, y: jax.Array, phi_test: jax.Array, y_test: jax.Array,
    heads: tuple[int, ...], widths: Sequence[int], T: float, sigma2: float, max_iter: int,
    gtol: float,
) -> tuple[list[theory.Solution], np.ndarray]:
    """The minimum of the action at every width of ``widths`` (ascending) and its test accuracy
    ``(n,)``: the path-attended inputs ``phi: (P, N0, Pi)`` with labels ``y: (P,)`` (test:
    ``phi_test: (Pt, N0, Pi)``, ``y_test: (Pt,)``), ``heads`` per layer, temperature ``T``, prior
    variance ``sigma2``, each minimum by L-BFGS to at most ``max_iter`` iterations and the
    gradient tolerance ``gtol`` (``theory.minimise_action``); logs each solve and warns where it
    is not a clean minimum (gradient, Hessian)."""
    sols = []
    for i, N in enumerate(widths):
        sol = theory.minimise_action(phi, y, heads, N, T, sigma2, max_iter, gtol)
        sols.append(sol)
        log.info("N=%d (%d/%d): %d L-BFGS steps, %.1f s, max|grad| %.1e, min Hessian eig %.2e",
                 N, i + 1, len(widths), sol.iterations, sol.seconds, sol.grad_max,
                 sol.hessian_min)
        if sol.grad_max > 1e-6 or sol.hessian_min <= 0:
            log.warning("N=%d: not a clean minimum (max|grad| %.1e, min Hessian eig %.2e)",
                        N, sol.grad_max, sol.hessian_min)
    acc = [theory.accuracy(theory.predictive_mean(phi, y, phi_test, jnp.asarray(s.Us[0]), T),
                           y_test) for s in sols]
    return sols, np.array(acc)


def gp_accuracies(
    phis: Mapping[str, tuple[jax.Array, jax.Array]], nets: Mapping[str, Network],
    y: jax.Array, y_test: jax.Array, T: float, sigma2: float,
) -> np.ndarray:
    """Test accuracy ``(n_nets,)`` of the GP limit of every network, in the order of ``nets``;
    ``phis[net]``: its ``(train, test)`` path-attended inputs."""
    acc = []
    for net, layers in nets.items():
        U = theory.gp_order_parameters(layer_heads(layers), sigma2)[0]
        mean = theory.predictive_mean(phis[net][0], y, phis[net][1], U, T)
        acc.append(theory.accuracy(mean, y_test))
    return np.array(acc)
