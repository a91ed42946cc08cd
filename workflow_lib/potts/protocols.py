"""The sampling protocols of a data set (Rende et al. 2024, App. A): ``single_chain`` (the
paper's), ``independent_chains`` and ``parallel_tempering``, each run K times in one batched call
(``run_protocol``) with the schedule of a ``ProtocolOptions``; ``PROTOCOLS`` says over which
pairs of saved configurations each protocol's mean Hamming distance is measured."""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.potts import gibbs, tempering

PROTOCOLS = {
    "single_chain": "one chain; Hamming distance over all pairs of its saved configurations "
    "(within-chain)",
    "independent_chains": "one final configuration per independent chain; Hamming distance over "
    "all pairs of them (across chains)",
    "parallel_tempering": "one replica-exchange run, configurations saved at the target beta; "
    "Hamming distance over all pairs of them (within-run)",
}


@dataclass(frozen=True)
class ProtocolOptions:
    """A protocol and its schedule, built by the caller (the sample stage from its ``sampling``
    config section): ``name``, one of ``PROTOCOLS``; ``burn_in`` sweeps before the first saved
    configuration (``independent_chains``: each chain's sweeps); ``sweeps_between`` two saved
    configurations (``single_chain``, ``parallel_tempering``); ``replicas`` on the beta ladder
    and ``ladder_min``, its hottest rung's beta as a fraction of the target
    (``parallel_tempering``)."""

    name: str
    burn_in: int
    sweeps_between: int
    replicas: int
    ladder_min: float


@dataclass(frozen=True)
class Run:
    """K runs of a protocol: ``saved: (K, n_save, L)``, ``burn_in_energy: (K, burn_in,
    n_monitor)``, ``extra``: protocol diagnostics, name -> ``(K, ...)``."""

    saved: np.ndarray
    burn_in_energy: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)


def run_protocol(
    keys: jax.Array, J: np.ndarray, U: np.ndarray, betas: np.ndarray,
    protocol: ProtocolOptions, *, n_save: int, blocks: int,
) -> Run:
    """Run ``protocol`` once per ``(keys[k], betas[k])``, ``keys: (K,)``, ``betas: (K,)``, on the
    couplings ``J: (L, L)``, ``U: (C, C)``, saving ``n_save`` configurations per run, in
    ``blocks`` blocks of sweeps, a log line each (``gibbs``, ``tempering``)."""
    betas = np.atleast_1d(np.asarray(betas, dtype=np.float64))
    K, name = betas.shape[0], protocol.name
    if name == "single_chain":
        saved, trace = gibbs.single_chain(
            keys, jnp.broadcast_to(J, (K, *J.shape)),
            jnp.broadcast_to(U, (K, *U.shape)), jnp.asarray(betas), n_save=n_save,
            burn_in=protocol.burn_in, sweeps_between=protocol.sweeps_between, blocks=blocks,
        )
        return Run(saved, trace[..., None])
    if name == "independent_chains":
        runs = [
            gibbs.independent_chains(
                k, jnp.asarray(J), jnp.asarray(U), b, n_chains=n_save, n_sweeps=protocol.burn_in,
                blocks=blocks,
            )
            for k, b in zip(keys, betas, strict=True)
        ]
        return Run(np.stack([r[0] for r in runs]), np.stack([r[1] for r in runs]))
    if name == "parallel_tempering":
        pt = tempering.parallel_tempering(
            keys, jnp.asarray(J), jnp.asarray(U), jnp.asarray(betas),
            n_replicas=protocol.replicas, ladder_min=protocol.ladder_min, n_save=n_save,
            burn_in=protocol.burn_in, sweeps_between=protocol.sweeps_between, blocks=blocks,
        )
        extra = {"ladder": pt.betas, "swap_acceptance": pt.swap_acceptance,
                 "round_trips": pt.round_trips}
        return Run(pt.saved, pt.burn_in_energy[..., None], extra)
    raise ValueError(f"unknown protocol {name!r}; allowed: {', '.join(PROTOCOLS)}")
