"""The sampling protocols of a data set (Rende et al. 2024, App. A): ``single_chain`` (the
paper's), ``independent_chains`` and ``parallel_tempering``, each run K times in one batched call
(``run_protocol``); ``PROTOCOLS`` says over which pairs of saved configurations each protocol's
mean Hamming distance is measured."""

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
