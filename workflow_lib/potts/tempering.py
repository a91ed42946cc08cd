"""Parallel tempering (replica exchange) for the generalised Potts model.

Each run holds R replicas on a geometric beta ladder ``beta_r = beta * ladder_min**(r / (R - 1))``
(rung 0 is the target beta, the coldest; rung R-1 the hottest). After every sweep of all replicas
(``gibbs.sweep_chains``, the same kernel as the other protocols) neighbouring rungs ``(r, r+1)``
with ``r`` of the sweep's parity propose to swap their configurations, accepted with probability
``min(1, exp((beta_r - beta_{r+1}) (E_r - E_{r+1})))`` (detailed balance in the product
ensemble). Saved configurations are taken at rung 0, so they sample the target beta.

K independent runs (keys, target betas) are batched as K R chains in one call. Uniforms of sweep
``t`` come from ``fold_in(key_k, t)``: results do not depend on blocks or batching.

Diagnostics per run: swap acceptance per rung pair, round trips (a configuration that goes from
rung 0 to rung R-1 and back to rung 0), the rung-0 energy after every burn-in sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from workflow_lib.potts import gibbs
from workflow_lib.potts.model import energy

Array = jax.Array
F32 = jnp.float32


def ladder(beta: Array, n_replicas: int, ladder_min: float) -> Array:
    """``(K, R)`` betas: ``beta: (K,)`` times ``ladder_min**(r / (R - 1))``, ``r = 0..R-1``."""
    frac = ladder_min ** (jnp.arange(n_replicas) / max(n_replicas - 1, 1))
    return jnp.asarray(beta)[:, None] * frac[None, :]


@dataclass(frozen=True)
class Tempered:
    """Output of ``parallel_tempering`` for K runs of R replicas.

    ``saved: (K, n_save, L)`` rung-0 configurations; ``burn_in_energy: (K, burn_in)`` rung-0
    energy after every burn-in sweep; ``betas: (K, R)`` the ladders; ``swap_acceptance:
    (K, R-1)`` accepted / proposed swaps of rungs (r, r+1) over the whole run; ``round_trips:
    (K,)`` completed rung 0 -> R-1 -> 0 trips.
    """

    saved: np.ndarray
    burn_in_energy: np.ndarray
    betas: np.ndarray
    swap_acceptance: np.ndarray
    round_trips: np.ndarray


# carry: state (L, K R), energies (K, R), direction (K, R) travelling with the configurations
# (+1: last extreme visited was rung 0, -1: rung R-1, 0: none yet), accepted (K, R-1),
# proposed (K, R-1), round trips (K,)
Carry = tuple[Array, Array, Array, Array, Array, Array]


def _step(carry: Carry, t: Array, keys: Array, bJ: Array, betas: Array, J: Array, U: Array):
    """One sweep of every replica, then one round of neighbour swaps."""
    state, _, dirn, acc, prop, trips = carry
    L = state.shape[0]
    K, R = betas.shape
    u = jax.vmap(lambda k: gibbs.sweep_uniforms(k, t, (L + 1, R)))(keys)  # (K, L+1, R)
    u_sweep = jnp.moveaxis(u[:, :L], 0, 1).reshape(L, K * R)
    state = gibbs.sweep_chains(state, u_sweep, bJ, U)
    E = energy(state.T.reshape(K, R, L), J, U)  # (K, R)
    r = jnp.arange(R - 1)
    active = (r % 2) == (t % 2)  # disjoint pairs (r, r+1) of this sweep's parity
    log_ratio = (betas[:, :-1] - betas[:, 1:]) * (E[:, :-1] - E[:, 1:])
    accept = active & (jnp.log(u[:, L, : R - 1]) < log_ratio)  # (K, R-1)
    zero = jnp.zeros((K, 1), jnp.int32)
    up = jnp.concatenate([accept.astype(jnp.int32), zero], axis=1)
    down = jnp.concatenate([zero, accept.astype(jnp.int32)], axis=1)
    perm = jnp.arange(R)[None, :] + up - down  # (K, R): rung r takes the configuration at perm
    state = jnp.take_along_axis(state.reshape(L, K, R), perm[None], axis=2).reshape(L, K * R)
    E = jnp.take_along_axis(E, perm, axis=1)
    dirn = jnp.take_along_axis(dirn, perm, axis=1)
    trips = trips + (dirn[:, 0] == -1).astype(jnp.int32)
    dirn = dirn.at[:, 0].set(1)
    dirn = dirn.at[:, R - 1].set(jnp.where(dirn[:, R - 1] == 1, -1, dirn[:, R - 1]))
    carry = (state, E, dirn, acc + accept, prop + active.astype(jnp.int32)[None, :], trips)
    return carry


def _host(carry: Carry) -> tuple[np.ndarray, ...]:
    """A carry as NumPy arrays, for a checkpoint."""
    return tuple(np.asarray(c) for c in carry)


def _model(J: Array, U: Array, betas: Array) -> tuple[Array, Array, Array]:
    Jf = J.astype(F32)
    bJ = (betas.reshape(-1)[None, None, :] * Jf[:, :, None]).astype(F32)  # (L, L, K R)
    return Jf, U.astype(F32), bJ


@partial(gibbs.kernel_jit, static_argnames="n_sweeps")
def _burn(keys: Array, J: Array, U: Array, betas: Array, *, n_sweeps: int):
    """Random starts and burn-in: ``(carry, rung-0 energy (K, n_sweeps))``."""
    K, R = betas.shape
    L, C = J.shape[0], U.shape[0]
    Jf, Uf, bJ = _model(J, U, betas)
    init = jax.vmap(lambda k: jax.random.randint(k, (L, R), 0, C, jnp.int32))(keys[:, 0])
    state = jnp.moveaxis(init, 0, 1).reshape(L, K * R)
    E = energy(state.T.reshape(K, R, L), Jf, Uf)
    carry = (state, E, jnp.zeros((K, R), jnp.int32), jnp.zeros((K, R - 1), jnp.int32),
             jnp.zeros((K, R - 1), jnp.int32), jnp.zeros(K, jnp.int32))

    def step(c, t):
        c = _step(c, t, keys[:, 1], bJ, betas, Jf, Uf)
        return c, c[1][:, 0]

    carry, trace = lax.scan(step, carry, jnp.arange(n_sweeps))
    return carry, trace.T


@partial(gibbs.kernel_jit, static_argnames=("n_save", "sweeps_between"))
def _save(keys, J, U, betas, carry, t0, *, n_save: int, sweeps_between: int):
    K, R = betas.shape
    L = J.shape[0]
    Jf, Uf, bJ = _model(J, U, betas)

    def save(c, n):
        ts = t0 + n * sweeps_between + jnp.arange(sweeps_between)
        c, _ = lax.scan(lambda c, t: (_step(c, t, keys[:, 1], bJ, betas, Jf, Uf), None), c, ts)
        return c, c[0].reshape(L, K, R)[:, :, 0].T  # (K, L)

    carry, saved = lax.scan(save, carry, jnp.arange(n_save))
    return carry, jnp.moveaxis(saved, 0, 1)


def parallel_tempering(
    key: Array, J: Array, U: Array, beta: Array, *, n_replicas: int, ladder_min: float,
    n_save: int, burn_in: int, sweeps_between: int, blocks: int = 1,
) -> Tempered:
    """K parallel-tempering runs of one model (``J: (L, L)``, ``U: (C, C)``), ``key: (K,)``,
    target ``beta: (K,)``: uniform random starts, ``burn_in`` sweeps, then one rung-0
    configuration saved every ``sweeps_between`` sweeps, in ``blocks`` jitted calls. In a job
    with checkpoints each block is a boundary (``gibbs.resumable_blocks``, part ``parallel
    tempering n``: the replicas' state and statistics, the configurations saved so far and the
    burn-in trace)."""
    if n_replicas < 2:
        raise ValueError(f"parallel tempering needs at least 2 replicas, got {n_replicas}")
    betas = ladder(jnp.asarray(beta, F32), n_replicas, ladder_min).astype(F32)
    K, L = betas.shape[0], J.shape[0]
    keys = jax.vmap(lambda k: jax.random.split(k))(key)  # (K, 2): starts, run
    sizes = gibbs.block_sizes(n_save, blocks)
    ends = np.cumsum([0, *sizes])  # block b saves configurations ends[b] to ends[b + 1] - 1

    def begin():
        carry, trace = _burn(keys, J, U, betas, n_sweeps=burn_in)
        return _host(carry), np.zeros((K, n_save, L), np.int32), np.asarray(trace)

    def step(b, state):
        carry, saved, burn_trace = state
        carry, block = _save(keys, J, U, betas, carry, burn_in + int(ends[b]) * sweeps_between,
                             n_save=sizes[b], sweeps_between=sweeps_between)
        saved[:, ends[b]:ends[b + 1]] = np.asarray(block)
        return _host(carry), saved, burn_trace

    carry_like = tuple(np.zeros(c.shape, c.dtype)  # the carry's structure, nothing run
                       for c in _burn.eval_shape(keys, J, U, betas, n_sweeps=1)[0])
    like = (carry_like, np.zeros((K, n_save, L), np.int32), np.zeros((K, burn_in), np.float32))
    updates = [K * n_replicas * L * k * sweeps_between for k in sizes]
    carry, saved, burn_trace = gibbs.resumable_blocks("parallel tempering", updates, like, begin,
                                                      step)
    _, _, _, acc, prop, trips = (np.asarray(x) for x in carry)
    return Tempered(
        saved=saved,
        burn_in_energy=np.asarray(burn_trace),
        betas=np.asarray(betas),
        swap_acceptance=acc / np.maximum(prop, 1),
        round_trips=trips,
    )
