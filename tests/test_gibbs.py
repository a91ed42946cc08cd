"""The Gibbs sampler against exact enumeration (L=4, C=3), for both protocols."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workflow_lib.potts import gibbs, model


def onehot_stats(seqs: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Empirical one- and two-site marginals of ``seqs: (..., n, L)`` over the ``n`` axis."""
    x = np.eye(C)[seqs]  # (..., n, L, C)
    p1 = x.mean(axis=-3)
    p2 = np.einsum("...nia,...njb->...ijab", x, x) / seqs.shape[-2]
    return p1, p2


def max_z_independent(seqs: np.ndarray, J, U, beta: float) -> float:
    """Largest |z| of the one- and two-site marginals of independent draws ``seqs: (n, L)``."""
    n, C = seqs.shape[0], U.shape[0]
    q1, q2 = model.exact_marginals(J, U, beta)
    p1, p2 = onehot_stats(seqs, C)
    iu = np.triu_indices(seqs.shape[1], k=1)
    est = np.concatenate([p1.ravel(), p2[iu].ravel()])
    exact = np.concatenate([q1.ravel(), q2[iu].ravel()])
    ok = np.minimum(exact, 1 - exact) * n >= 10  # where the normal approximation holds
    return float(np.max(np.abs(est - exact)[ok] / np.sqrt(exact * (1 - exact) / n)[ok]))


def max_z_batch_means(seqs: np.ndarray, J, U, beta: float) -> float:
    """Largest |z| of the marginals, with errors from the spread over independent chains.

    ``seqs: (R, n, L)``: R independent chains of n (correlated) saved configurations each.
    """
    R, C = seqs.shape[0], U.shape[0]
    q1, q2 = model.exact_marginals(J, U, beta)
    p1, p2 = onehot_stats(seqs, C)
    iu = np.triu_indices(seqs.shape[2], k=1)
    est = np.concatenate([p1.reshape(R, -1), p2[:, iu[0], iu[1]].reshape(R, -1)], axis=1)
    exact = np.concatenate([q1.ravel(), q2[iu].ravel()])
    se = est.std(axis=0, ddof=1) / np.sqrt(R)
    return float(np.max(np.abs(est.mean(axis=0) - exact) / np.maximum(se, 1e-12)))


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.4, 0.8, 1.0])
def test_independent_chains_match_exact_marginals(tiny_model, beta):
    J, U = tiny_model
    final, trace = gibbs.independent_chains(
        jax.random.key(3), jnp.asarray(J), jnp.asarray(U), beta, n_chains=20_000, n_sweeps=500
    )
    assert final.shape == (20_000, 4) and trace.shape == (500, 8)
    assert max_z_independent(final, J, U, beta) < 5.0


@pytest.mark.slow
def test_exactness_check_has_power(tiny_model):
    """Samples at beta = 0.7 fail the check against the exact marginals at beta = 0.8."""
    J, U = tiny_model
    final, _ = gibbs.independent_chains(
        jax.random.key(3), jnp.asarray(J), jnp.asarray(U), 0.7, n_chains=20_000, n_sweeps=500
    )
    assert max_z_independent(final, J, U, 0.8) > 5.0


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_single_chain_matches_exact_marginals(tiny_model, beta):
    J, U = tiny_model
    R = 48
    saved, burn = gibbs.single_chain(
        jax.random.split(jax.random.key(4), R), jnp.broadcast_to(J, (R, 4, 4)),
        jnp.broadcast_to(U, (R, 3, 3)), jnp.full(R, beta), n_save=400, burn_in=50,
        sweeps_between=3, blocks=2,
    )
    assert saved.shape == (R, 400, 4) and burn.shape == (R, 50)
    assert max_z_batch_means(saved, J, U, beta) < 5.0


@pytest.mark.slow
def test_single_chain_is_block_and_batch_invariant(tiny_model):
    """Splitting the run into blocks or batching realisations does not change a chain."""
    J, U = tiny_model
    keys = jax.random.split(jax.random.key(5), 2)
    args = (keys, jnp.stack([J, 2 * J]), jnp.stack([U, U]), jnp.array([0.7, 0.7]))
    kw = dict(n_save=30, burn_in=10, sweeps_between=4)
    a, _ = gibbs.single_chain(*args, **kw, blocks=1)
    b, _ = gibbs.single_chain(*args, **kw, blocks=4)
    c, _ = gibbs.single_chain(keys[1:], args[1][1:], args[2][1:], args[3][1:], **kw)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[1], c[0])


def test_inverse_cdf_draw_frequencies():
    logits = jnp.array([0.0, 1.0, -1.0, 2.0])
    u = jax.random.uniform(jax.random.key(0), (200_000,))
    draws = np.asarray(gibbs.inverse_cdf_draw(jnp.broadcast_to(logits, (200_000, 4)), u))
    p = np.asarray(jax.nn.softmax(logits))
    freq = np.bincount(draws, minlength=4) / draws.size
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / draws.size))


# ------------------------------------------------------------------ the kernel itself


def integer_model(key: int, L: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    """``J: (L, L)`` symmetric zero-diagonal and ``U: (C, C)`` symmetric, small integers: every
    field is then exact in float32, so kernel and reference can be compared for equality."""
    rng = np.random.default_rng(key)
    J = np.triu(rng.integers(-3, 4, (L, L)), 1)
    U = np.triu(rng.integers(-3, 4, (C, C)))
    return (J + J.T).astype(np.float64), (U + np.triu(U, 1).T).astype(np.float64)


def kernel_fields(s, bJ, Urows, offset) -> np.ndarray:
    """The fields the kernel draws from, every site, ``(B, L, C)``: for each site block of
    ``site_block(L)`` sites (the last one ending at L), ``outside_fields`` at its start plus
    ``site_field`` of each of its sites, on the state ``s: (L, B)`` as it stands."""
    L = s.shape[0]
    K = gibbs.site_block(L)
    out = np.zeros((s.shape[1], L, Urows.shape[1]), np.float32)
    for i0 in sorted({*range(0, L - K + 1, K), L - K}):
        outside = (None if K == L
                   else gibbs.outside_fields(s, jnp.int32(i0), K, bJ, Urows, offset))
        for i in range(i0, i0 + K):
            got = gibbs.site_field(s, jnp.int32(i), jnp.int32(i0), K, outside, bJ, Urows, offset)
            out[:, i] = np.asarray(got)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("L", [7, 40, 69, 70])  # one block of all sites; blocks of 16, the
def test_site_field_equals_local_fields(L):  # last overlapping the one before (69) or not
    """The field the kernel draws from is ``model.local_fields``, exactly, at every site, for
    shared and per-chain models."""
    C, B = 5, 6
    J, U = integer_model(L, L, C)
    beta = 2.0
    s = jax.random.randint(jax.random.key(L), (L, B), 0, C, jnp.int32)
    want = np.asarray(model.local_fields(s.T, J, U, beta))  # (B, L, C)
    got = kernel_fields(s, jnp.asarray(beta * J, jnp.float32), jnp.asarray(U.T, jnp.float32), 0)
    np.testing.assert_array_equal(got, want)
    # per chain: chain b has J_b = (b + 1) J, U_b = U + b
    Js = np.stack([(b + 1) * J for b in range(B)])
    Us = np.stack([U + b for b in range(B)])
    want = np.stack([np.asarray(model.local_fields(s.T[b], Js[b], Us[b], beta)) for b in range(B)])
    bJ = jnp.asarray(np.moveaxis(beta * Js, 0, -1), jnp.float32)
    Urows = jnp.asarray(np.moveaxis(Us, 1, 2).reshape(B * C, C), jnp.float32)
    offset = jnp.arange(B, dtype=jnp.int32) * C
    np.testing.assert_array_equal(kernel_fields(s, bJ, Urows, offset), want)


def reference_sweep(s: np.ndarray, u: np.ndarray, J, U, betas) -> np.ndarray:
    """One cyclic sweep in NumPy (float64): site i of chain b drawn from
    ``softmax(model.local_fields)`` by inverse CDF with ``u[i, b]``. ``s, u: (L, B)``."""
    s = s.copy()
    for i in range(s.shape[0]):
        for b in range(s.shape[1]):
            h = np.asarray(model.local_fields(s[:, b], J, U, betas[b]))[i]
            cdf = np.cumsum(np.exp(h - h.max()))
            s[i, b] = np.sum(cdf[:-1] <= u[i, b] * cdf[-1])
    return s


@pytest.mark.slow
@pytest.mark.parametrize(("L", "n_sweeps"), [(6, 20), (69, 3)])  # one block; blocks of 16
def test_sweep_chains_matches_reference_sampler(L, n_sweeps):
    C, B = 4, 5
    J, U = integer_model(1, L, C)
    betas = np.linspace(0.2, 1.0, B)
    s = np.asarray(jax.random.randint(jax.random.key(0), (L, B), 0, C, jnp.int32))
    bJ = jnp.asarray(np.moveaxis(betas[:, None, None] * J, 0, -1), jnp.float32)
    sweep = jax.jit(gibbs.sweep_chains)
    for t in range(n_sweeps):
        u = jax.random.uniform(jax.random.key(t), (L, B), jnp.float32)
        want = reference_sweep(s, np.asarray(u, np.float64), J, U, betas)
        s_new = np.asarray(sweep(jnp.asarray(s), u, bJ, jnp.asarray(U, jnp.float32)))
        np.testing.assert_array_equal(s_new, want)
        s = s_new


@pytest.mark.slow
def test_independent_chains_follow_sweep_chains_in_blocks():
    """At a length swept in site blocks, ``independent_chains`` (shared couplings, one
    contraction for all chains) gives exactly the chains of ``sweep_chains`` (per-chain
    couplings) from the documented uniforms (integer couplings: float32 sums exact)."""
    L, C, B, beta, T = 70, 5, 6, 0.5, 3
    J, U = integer_model(2, L, C)
    final, _ = gibbs.independent_chains(
        jax.random.key(9), jnp.asarray(J), jnp.asarray(U), beta, n_chains=B, n_sweeps=T
    )
    k_init, k_run = jax.random.split(jax.random.key(9))
    s = jax.random.randint(k_init, (L, B), 0, C, jnp.int32)
    bJ = jnp.broadcast_to(jnp.asarray(beta * J, jnp.float32)[..., None], (L, L, B))
    for t in range(T):
        u = jax.random.uniform(jax.random.fold_in(k_run, t), (L, B), jnp.float32)
        s = gibbs.sweep_chains(s, u, bJ, jnp.asarray(U, jnp.float32))
    np.testing.assert_array_equal(np.asarray(s).T, final)


@pytest.mark.slow
def test_sweep_chains_reproduces_both_protocols(tiny_model):
    """``sweep_chains`` with the documented uniforms gives exactly the chains of
    ``single_chain`` (per-realisation J and beta, shared U) and ``independent_chains``."""
    J, U = tiny_model
    L, C, R = 4, 3, 3
    keys = jax.random.split(jax.random.key(6), R)
    Js, betas = np.stack([J, -J, 2 * J]), np.array([0.5, 0.8, 1.1])
    burn, n_save, between = 3, 4, 2
    saved, _ = gibbs.single_chain(
        keys, jnp.asarray(Js), jnp.broadcast_to(U, (R, C, C)), jnp.asarray(betas), n_save=n_save,
        burn_in=burn, sweeps_between=between,
    )
    k_init, k_run = zip(*(jax.random.split(k) for k in keys), strict=True)
    s = jnp.stack([jax.random.randint(k, (L,), 0, C, jnp.int32) for k in k_init], axis=-1)
    bJ = jnp.asarray(jnp.moveaxis(jnp.asarray(betas)[:, None, None] * Js, 0, -1), jnp.float32)
    mine = []
    for t in range(burn + n_save * between):
        u = jnp.stack([jax.random.uniform(jax.random.fold_in(k, t), (L,), jnp.float32)
                       for k in k_run], -1)
        s = gibbs.sweep_chains(s, u, bJ, jnp.asarray(U, jnp.float32))
        if t >= burn and (t - burn + 1) % between == 0:
            mine.append(np.asarray(s).T)
    np.testing.assert_array_equal(np.stack(mine, axis=1), saved)

    B, beta = 10, 0.9
    final, _ = gibbs.independent_chains(
        jax.random.key(7), jnp.asarray(J), jnp.asarray(U), beta, n_chains=B, n_sweeps=6
    )
    k_init, k_run = jax.random.split(jax.random.key(7))
    s = jax.random.randint(k_init, (L, B), 0, C, jnp.int32)
    bJ = jnp.broadcast_to(jnp.asarray(beta * J, jnp.float32)[..., None], (L, L, B))
    for t in range(6):
        u = jax.random.uniform(jax.random.fold_in(k_run, t), (L, B), jnp.float32)
        s = gibbs.sweep_chains(s, u, bJ, jnp.asarray(U, jnp.float32))
    np.testing.assert_array_equal(np.asarray(s).T, final)


@pytest.mark.slow
def test_independent_chains_are_block_invariant(tiny_model):
    """Blocks change how uniforms are chunked, not the chains or the energy trace."""
    J, U = tiny_model
    kw = dict(n_chains=64, n_sweeps=10)
    a = gibbs.independent_chains(jax.random.key(8), jnp.asarray(J), jnp.asarray(U), 0.7, **kw)
    b = gibbs.independent_chains(jax.random.key(8), jnp.asarray(J), jnp.asarray(U), 0.7, **kw,
                                 blocks=3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_traced_sweep_does_not_grow_with_length():
    """The sweep's program is the same size at L = 69 and L = 645 (loops over site blocks and
    their sites, nothing unrolled over L): compile time is flat in L."""

    def n_eqns(jaxpr) -> int:  # equations, counted into loop bodies and other sub-programs
        subs = [s for e in jaxpr.eqns for v in e.params.values()
                for s in (v if isinstance(v, tuple | list) else (v,))]
        inner = [getattr(s, "jaxpr", s) for s in subs if hasattr(getattr(s, "jaxpr", s), "eqns")]
        return len(jaxpr.eqns) + sum(n_eqns(s) for s in inner)

    def size(L: int) -> int:
        args = (jnp.zeros((L, 2), jnp.int32), jnp.zeros((L, 2)), jnp.zeros((L, L, 2)),
                jnp.zeros((3, 3)))
        return n_eqns(jax.make_jaxpr(gibbs.sweep_chains)(*args).jaxpr)

    assert size(69) == size(645)
