"""Gibbs sampling of the generalised Potts model in JAX (Rende et al. 2024, App. A; design:
``docs/design/sampler_kernels.md``).

Cyclic single-site sweeps (sites 0..L-1), each site drawn from the exact conditional
``P(s_i = a | rest) ∝ exp(beta sum_{j != i} J_ij U[a, s_j])`` (``model.local_fields``) by an
inverse CDF with one uniform per chain and update. One sweep = L updates. The uniforms of sweep
``t`` come from ``fold_in(key, t)`` (one key per chain for ``single_chain``), so results do not
depend on how a run is split into blocks, batched or placed on devices.

Both protocols share one kernel (``sweep_chains`` is its public form): B chains in a chain-last
layout, state ``(L, B)``, everything elementwise over chains (shards over devices). A sweep runs
in blocks of K consecutive sites (``site_block``: K = L below L = 64, else 16). At a block's
start one contraction gives the fields on its K sites from all sites outside it
(``outside_fields``, O(K L C) per chain, as a matrix product); then its sites are drawn in order,
each adding the block's own K terms ``beta J_ij U[:, s_j]`` as one fused chain of gathers
(``site_field``), so each draw sees every earlier update. U is held by columns as rows (each
gather reads C adjacent numbers) and the fields are chain-first, ``(B, C)``. The work per
update is O(L C) and the traced program has a fixed size for L >= 64 (loops over blocks and
over sites), so compile time does not grow with L. Uniforms are drawn for a chunk of sweeps at
once (one random-number call per chunk, not per sweep).
``independent_chains`` runs many chains of one model; ``single_chain`` (the paper's protocol)
runs one chain per realisation, each with its own J, U, beta, batched the same way.

Long runs proceed in blocks of sweeps, with a log line per block (rate and ETA).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from workflow_lib.potts.model import energy
from workflow_lib.runtime import checkpoints

Array = jax.Array
F32 = jnp.float32
log = logging.getLogger("workflow_lib.potts")
# The workflow's jobs compile with XLA:CPU's fusion emitters off
# (``workflow_lib.runtime.jax_setup``: faster compilation of the short programs); the sweep kernels,
# the one hot loop, keep them on (more updates/s in batches: ``benchmarks/bench_gibbs.py``). Ignored
# off the CPU.
KERNEL_COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": True}
kernel_jit = partial(jax.jit, compiler_options=KERNEL_COMPILER_OPTIONS)


def inverse_cdf_draw(logits: Array, u: Array) -> Array:
    """Draw colours from ``softmax(logits)`` along the last axis by inverse CDF.

    ``logits: (..., C)``, ``u: (...)`` uniform in [0, 1) -> int32 ``(...)``. Unrolled over the C
    colours so that everything stays elementwise over the leading (chain) axes.
    """
    rows = [logits[..., a] for a in range(logits.shape[-1])]
    top = rows[0]
    for r in rows[1:]:
        top = jnp.maximum(top, r)
    cums, total = [], jnp.zeros_like(top)
    for r in rows:
        total = total + jnp.exp(r - top)
        cums.append(total)
    threshold = u * total
    count = jnp.zeros(u.shape, jnp.int32)
    for c in cums[:-1]:  # the last colour is drawn when no earlier cumulative sum exceeds u
        count = count + (c <= threshold).astype(jnp.int32)
    return count


def sweep_uniforms(key: Array, t: Array, shape: tuple[int, ...]) -> Array:
    """The float32 uniforms in [0, 1) of sweep ``t``, ``shape``, drawn from ``fold_in(key, t)``:
    a sweep's random numbers do not depend on how a run is split into blocks or batched."""
    return jax.random.uniform(jax.random.fold_in(key, t), shape, F32)


def _split_chains(x: Array) -> Array:
    """Shard the last (chain) axis over all local devices when it divides evenly.

    On CPU the workflow exposes one XLA device per thread, so this uses every core; with one
    device it is a no-op. Random numbers are partitionable, so results do not depend on it.
    """
    devices = jax.devices()
    if len(devices) == 1 or x.shape[-1] % len(devices):
        return x
    mesh = Mesh(np.array(devices), ("chains",))
    spec = PartitionSpec(*([None] * (x.ndim - 1)), "chains")
    return lax.with_sharding_constraint(x, NamedSharding(mesh, spec))


def log_block_progress(what: str, done: int, total: int, updates: float, t0: float) -> None:
    """Log line after block ``done`` of ``total`` of a long run started at ``t0``
    (``time.perf_counter``) that has made ``updates`` spin updates: rate, elapsed time, ETA."""
    elapsed = time.perf_counter() - t0
    rate = updates / max(elapsed, 1e-9)
    eta = elapsed * (total - done) / max(done, 1)
    log.info(
        "%s: block %d/%d, %.3g spin updates/s, %.0f s elapsed, ETA %.0f s",
        what, done, total, rate, elapsed, eta,
    )


def resumable_blocks(
    kind: str, updates: list[float], like: Any, begin: Callable[[], Any],
    step: Callable[[int, Any], Any],
) -> Any:
    """The blocks of one sampling call, a part of the job's checkpoint
    (``workflow_lib.runtime.checkpoints``) named ``kind n`` (the n-th such call of the job):
    ``begin()`` is the state before block 0 (random starts, burn-in), ``step(b, state)`` the
    state after block b, of the structure of ``like`` (NumPy arrays); ``updates[b]``, block b's
    spin updates (its log line's rate). Each block is a boundary, and a finished call's last
    state is kept, so a resumed job runs on from the block where it stopped, and skips the calls
    it had finished, to the same numbers. Returns the last state."""
    ck = checkpoints.current()
    name, n = ck.unit(kind), len(updates)
    done = ck.result(name, like)
    if done is not None:
        return done
    found = ck.resume(name, like)
    if found is None:
        first, state = 0, begin()
    else:
        first, state = found
        log.info("%s: resumed at block %d of %d", kind, first, n)
    start = time.perf_counter()
    for b in range(first, n):
        state = step(b, state)
        ck.boundary(name, b + 1, n, state)
        if n > 1:  # rate and ETA over the blocks this call has run
            log_block_progress(kind, b + 1 - first, n - first, sum(updates[first:b + 1]), start)
    ck.finish(name, state)
    return state


# ------------------------------------------------------------------ kernel

SITE_BLOCK = 16
"""Sites per block of the block kernel (``site_block``)."""

BLOCK_KERNEL_FROM = 64
"""Sequence length from which sweeps run in blocks of ``SITE_BLOCK`` sites (``site_block``)."""

UNIFORM_CHUNK_BYTES = 1 << 20
"""Uniforms of several sweeps are drawn in one call, up to this size and 64 sweeps."""


def site_block(L: int) -> int:
    """Sites per block of a sweep of length L: the kernel rule, in this one place.

    L < ``BLOCK_KERNEL_FROM``: one block of all L sites, so each site's field is one fused sum of
    L gathers (no contraction; fastest at the paper's L = 20 for 1 to 200 chains). Otherwise
    blocks of ``SITE_BLOCK`` sites: per site a fused sum of ``SITE_BLOCK`` gathers plus, per
    block, one contraction for the rest of the chain (measured faster from L = 64 on, shared or
    per-chain couplings, 1 to 100 chains). Depends on L alone, so every protocol and
    ``sweep_chains`` run the same kernel on the same chains.
    """
    return L if L < BLOCK_KERNEL_FROM else SITE_BLOCK


def outside_fields(state: Array, i0: Array | int, K: int, bJ: Array, Urows: Array,
                   offset: Array | int) -> Array:
    """Fields on the K sites ``i0..i0+K-1`` from all sites outside them, ``(K, B, C)``:
    ``h(k, b, a) = sum_{j not in block} bJ[i0 + k, j(, b)] U_b[a, s_j]``, one contraction.

    ``state: (L, B)`` int32; ``bJ = beta * J``: ``(L, L)`` shared or ``(L, L, B)`` per chain;
    row ``offset + c`` of ``Urows: (M, C)`` is ``U[:, c]`` of a chain (``offset``: 0 or
    ``(B,)``), so a gather reads C contiguous numbers (more updates/s than gathering columns,
    most with many chains: ``benchmarks/bench_gibbs.py``). Indices are in range, so
    gathers use ``mode="clip"`` (``take``'s default NaN fill costs).
    """
    L = state.shape[0]
    G = jnp.take(Urows, state + offset, axis=0, mode="clip")  # (L, B, C)
    rows = lax.dynamic_slice_in_dim(bJ, i0, K)  # (K, L) or (K, L, B)
    j = jnp.arange(L)
    inside = (j >= i0) & (j < i0 + K)
    rows = jnp.where(inside[:, None] if rows.ndim == 3 else inside, 0.0, rows)
    if rows.ndim == 2:
        return jnp.einsum("kj,jba->kba", rows, G)
    return jnp.einsum("kjb,jba->kba", rows, G)


def site_field(state: Array, i: Array | int, i0: Array | int, K: int, outside: Array | None,
               bJ: Array, Urows: Array, offset: Array | int) -> Array:
    """Logits of the conditional of site ``i`` (in the block ``i0..i0+K-1``) for B chains,
    ``(B, C)``: ``outside[i - i0] + sum_{m < K} bJ[i, i0 + m(, b)] U_b[:, s_{i0+m}]``, the block's
    sum one fused elementwise chain of K gathers in the order m = 0..K-1.

    ``outside: (K, B, C)`` from ``outside_fields``, or None when the block is the whole chain
    (then the sum starts at its first term); other arguments as there. With a zero diagonal in
    ``bJ`` the ``j = i`` term vanishes, as in ``model.local_fields``.
    """
    w = lax.dynamic_slice_in_dim(lax.dynamic_index_in_dim(bJ, i, keepdims=False), i0, K)
    w = w[..., None] if bJ.ndim == 3 else w[:, None, None]  # (K, B, 1) or (K, 1, 1)
    s = lax.dynamic_slice_in_dim(state, i0, K)  # (K, B)
    terms = (w[m] * jnp.take(Urows, s[m] + offset, axis=0, mode="clip") for m in range(K))
    h = next(terms) if outside is None else lax.dynamic_index_in_dim(outside, i - i0, 0, False)
    for term in terms:
        h = h + term
    return h


def _sweep(state: Array, u: Array, bJ: Array, Urows: Array, offset: Array | int) -> Array:
    """One cyclic sweep of B chains (arguments as in ``outside_fields``, ``u: (L, B)``).

    Blocks of ``K = site_block(L)`` sites, in order; the last block starts at ``L - K`` and keeps
    the sites it shares with the one before. At a block's start, ``outside_fields``; then its
    sites in order, each drawn from ``site_field``. The traced program has a fixed size for every
    L >= ``BLOCK_KERNEL_FROM`` (K fixed; loops over blocks and sites).
    """
    L = state.shape[0]
    K = site_block(L)

    def block(s: Array, i0: Array | int, first: Array | int, outside: Array | None) -> Array:
        def update(k, s):
            i = i0 + k
            new = inverse_cdf_draw(site_field(s, i, i0, K, outside, bJ, Urows, offset), u[i])
            if K < L:  # sites of the previous block stay
                new = jnp.where(i >= first, new, lax.dynamic_index_in_dim(s, i, keepdims=False))
            return lax.dynamic_update_index_in_dim(s, new, i, 0)

        return lax.fori_loop(0, K, update, s)

    if K == L:
        return block(state, 0, 0, None)

    def next_block(n, s):
        i0 = jnp.minimum(n * K, L - K)
        return block(s, i0, n * K, outside_fields(s, i0, K, bJ, Urows, offset))

    return lax.fori_loop(0, -(-L // K), next_block, state)


def sweep_chains(state: Array, u: Array, bJ: Array, U: Array) -> Array:
    """One cyclic sweep (sites 0..L-1) of B chains, each with its own coupling scale:
    state: (L, B) int32 colours, u: (L, B) float32 uniforms of this sweep (u[i, b] drives the
    update of site i of chain b, inverse CDF over colours 0..C-1 exactly as in the kernel),
    bJ: (L, L, B) float32 (= beta_b * J), U: (C, C) float32 shared. Returns the new (L, B).

    The kernel of ``independent_chains`` and ``single_chain`` (same ``site_block`` rule): the
    same uniforms give the same draws, bit for bit where the float32 sums are exact (integer
    couplings, as in the tests), otherwise up to the rounding of the block contraction.
    Jit-traceable, usable inside ``lax.scan``.
    """
    return _sweep(state, u, bJ.astype(F32), U.T.astype(F32), 0)


def _chunk(n: int, sweep_bytes: int) -> int:
    """Sweeps per uniform draw: the largest divisor of ``n`` within the chunk limits."""
    cap = max(1, min(64, UNIFORM_CHUNK_BYTES // max(sweep_bytes, 1)))
    return max((k for k in range(1, min(cap, n) + 1) if n % k == 0), default=1)


def _sweeps(
    state: Array, ts: Array, uniforms: Callable[[Array], Array], model: tuple,
    observe: Callable[[Array], Any],
) -> tuple[Array, Any]:
    """Sweeps ``ts: (n,)`` (uniforms ``uniforms(t): (L, B)``); returns the final state and
    ``observe(state)`` after each sweep, stacked ``(n, ...)``."""
    n = ts.shape[0]
    k = _chunk(n, 4 * state.size)

    def sweep(st, u):
        st = _sweep(st, u, *model)
        return st, observe(st)

    def chunk(st, tc):
        return lax.scan(sweep, st, jax.vmap(uniforms)(tc))

    final, obs = lax.scan(chunk, state, ts.reshape(n // k, k))
    return final, jax.tree.map(lambda x: x.reshape(n, *x.shape[2:]), obs)


# ------------------------------------------------------------------ many chains, shared model


def _monitored(s: Array, n_monitor: int) -> Array:
    """Chains ``0, k, 2k, ...`` (``k = B // n_monitor``) of ``s: (L, B)`` -> ``(n_monitor, L)``.
    Evenly spread, they stay on their own devices when the chains are sharded (the first n
    chains would all sit on one device, and gathering them every sweep halves the speed on
    two)."""
    L, B = s.shape
    k = B // n_monitor
    return s[:, : k * n_monitor].reshape(L, n_monitor, k)[:, :, 0].T


@partial(kernel_jit, static_argnames=("n_sweeps", "n_monitor"))
def _chains_block(key, J, U, beta, state, t0, *, n_sweeps: int, n_monitor: int):
    L, B = state.shape
    Jf, Uf = J.astype(F32), U.astype(F32)
    return _sweeps(
        _split_chains(state), t0 + jnp.arange(n_sweeps),
        lambda t: _split_chains(sweep_uniforms(key, t, (L, B))), ((beta * J).astype(F32), Uf.T, 0),
        lambda st: energy(_monitored(st, n_monitor), Jf, Uf),
    )


def independent_chains(
    key: Array, J: Array, U: Array, beta: float, *, n_chains: int, n_sweeps: int,
    n_monitor: int = 8, blocks: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """``n_chains`` independent chains from uniform random starts, ``n_sweeps`` sweeps each.

    Returns ``(final: (n_chains, L) int32, trace: (n_sweeps, n_monitor) float32)``, where
    ``trace`` holds the energy of ``n_monitor`` chains (every ``n_chains // n_monitor``-th)
    after every sweep. In a job with checkpoints each of the ``blocks`` blocks is a boundary
    (``resumable_blocks``, part ``independent chains n``).
    """
    L, C = J.shape[0], U.shape[0]
    k_init, k_run = jax.random.split(key)
    n_monitor = min(n_monitor, n_chains)
    sizes = block_sizes(n_sweeps, blocks)
    ends = np.cumsum([0, *sizes])  # block b runs sweeps ends[b] to ends[b + 1] - 1

    def begin():
        state = jax.random.randint(k_init, (L, n_chains), 0, C, jnp.int32)
        return np.asarray(state), np.zeros((n_sweeps, n_monitor), np.float32)

    def step(b, state):
        s, trace = state
        s, block = _chains_block(k_run, J, U, beta, s, int(ends[b]), n_sweeps=sizes[b],
                                 n_monitor=n_monitor)
        trace[ends[b]:ends[b + 1]] = np.asarray(block)
        return np.asarray(s), trace

    like = (np.zeros((L, n_chains), np.int32), np.zeros((n_sweeps, n_monitor), np.float32))
    state, trace = resumable_blocks("independent chains", [k * L * n_chains for k in sizes],
                                    like, begin, step)
    return state.T, trace


# ------------------------------------------------------------------ one chain per model


def _per_chain(keys: Array, J: Array, U: Array, beta: Array) -> tuple[tuple, Callable]:
    """The R models in the kernel's layout, and the uniforms ``(L, R)`` of sweep t.

    Not sharded: for R of order 30, splitting over devices costs more than it gains.
    """
    R, L, C = J.shape[0], J.shape[1], U.shape[1]
    bJ = jnp.moveaxis(beta[:, None, None] * J, 0, -1).astype(F32)  # (L, L, R)
    Urows = jnp.moveaxis(U, 1, 2).reshape(R * C, C).astype(F32)  # [r C + c, a] = U[r, a, c]
    offset = jnp.arange(R, dtype=jnp.int32) * C

    def uniforms(t: Array) -> Array:
        return jax.vmap(lambda k: sweep_uniforms(k, t, (L,)))(keys).T

    return (bJ, Urows, offset), uniforms


def _single_keys(key: Array) -> tuple[Array, Array]:
    """Chain r's ``(k_init, k_run) = split(key[r])``, each ``(R,)``."""
    keys = jax.vmap(jax.random.split)(key)
    return keys[:, 0], keys[:, 1]


@partial(kernel_jit, static_argnames="n_sweeps")
def _single_burn(key, J, U, beta, *, n_sweeps: int):
    """Random starts and burn-in: ``(run keys (R,), state (R, L), energy trace (R, n_sweeps))``."""
    L, C = J.shape[1], U.shape[1]
    k_init, k_run = _single_keys(key)
    state = jax.vmap(lambda k: jax.random.randint(k, (L,), 0, C, jnp.int32))(k_init)
    model, uniforms = _per_chain(k_run, J, U, beta)
    Jf, Uf = J.astype(F32), U.astype(F32)
    final, trace = _sweeps(
        state.T, jnp.arange(n_sweeps), uniforms, model, lambda st: jax.vmap(energy)(st.T, Jf, Uf)
    )
    return k_run, final.T, trace.T


@partial(kernel_jit, static_argnames=("n_save", "sweeps_between"))
def _single_save(keys, J, U, beta, state, t0, *, n_save: int, sweeps_between: int):
    model, uniforms = _per_chain(keys, J, U, beta)

    def save(st, n):
        ts = t0 + n * sweeps_between + jnp.arange(sweeps_between)
        st, _ = _sweeps(st, ts, uniforms, model, lambda st: None)
        return st, st.T

    final, saved = lax.scan(save, state.T, jnp.arange(n_save))
    return final.T, jnp.moveaxis(saved, 0, 1)


def single_chain(
    key: Array, J: Array, U: Array, beta: Array, *, n_save: int, burn_in: int,
    sweeps_between: int, blocks: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's protocol, batched over realisations.

    ``key: (R,)`` keys, ``J: (R, L, L)``, ``U: (R, C, C)``, ``beta: (R,)``: R independent chains,
    each with its own model. Each starts uniformly at random, runs ``burn_in`` sweeps, then saves
    one configuration every ``sweeps_between`` sweeps, in ``blocks`` jitted calls. Chain r:
    ``k_init, k_run = split(key[r])``, start ``randint(k_init, (L,), 0, C)``, uniforms of sweep
    t ``uniform(fold_in(k_run, t), (L,))``, sweeps by ``sweep_chains``' kernel.
    Returns ``(saved: (R, n_save, L) int32, burn_in_energy: (R, burn_in) float32)``.

    In a job with checkpoints each block is a boundary (``resumable_blocks``, part ``single chain
    n``: the chains' state, the configurations saved so far and the burn-in trace)."""
    R, L = J.shape[0], J.shape[1]
    sizes = block_sizes(n_save, blocks)
    ends = np.cumsum([0, *sizes])  # block b saves configurations ends[b] to ends[b + 1] - 1
    k_run = _single_keys(key)[1]

    def begin():
        _, s, trace = _single_burn(key, J, U, beta, n_sweeps=burn_in)
        return np.asarray(s), np.zeros((R, n_save, L), np.int32), np.asarray(trace)

    def step(b, state):
        s, saved, burn_trace = state
        t0 = burn_in + int(ends[b]) * sweeps_between
        s, block = _single_save(k_run, J, U, beta, s, t0, n_save=sizes[b],
                                sweeps_between=sweeps_between)
        saved[:, ends[b]:ends[b + 1]] = np.asarray(block)
        return np.asarray(s), saved, burn_trace

    like = (np.zeros((R, L), np.int32), np.zeros((R, n_save, L), np.int32),
            np.zeros((R, burn_in), np.float32))
    _, saved, burn_trace = resumable_blocks(
        "single chain", [R * L * k * sweeps_between for k in sizes], like, begin, step)
    return saved, burn_trace


def block_sizes(total: int, blocks: int) -> list[int]:
    """Split ``total`` into at most ``blocks`` near-equal positive parts (few distinct sizes,
    so few compilations)."""
    blocks = max(1, min(blocks, total))
    base, extra = divmod(total, blocks)
    return [base + 1] * extra + [base] * (blocks - extra)

