"""The attention-paths study on the hidden-Markov-chain task (Tiberi et al. 2024): model, task,
theory, samples and stages."""

from __future__ import annotations

import itertools
import json
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
import yaml

import workflow_lib  # noqa: F401  (float64)
from workflow_lib.attention import designs, model, sampling, tasks, theory
from workflow_lib.core.artefacts import read_artefact
from workflow_lib.core.config import load_config
from workflow_lib.studies.attention_hmm.artefacts import PATHS_SAMPLES, PATHS_THEORY
from workflow_lib.studies.attention_hmm.registry import STUDY as HMM

T_RIDGE = 0.01
TASK = tasks.MarkovTask()  # the paper's sizes: T = 30, D = 200, N0 = 231


def _four_paths_data(task: tasks.MarkovTask, sizes: tuple[int, ...]) -> tuple:
    """The four-paths network of Fig. 2c on ``task``: ``(phi (n, N0, 4), y (n,))`` per size."""
    *keys, k_heads = jax.random.split(jax.random.key(3), len(sizes) + 1)
    heads = tasks.heads(k_heads, task)
    weights = [
        jnp.stack([heads[h] for h in layer]) for layer in designs.EXPERIMENTS["four_paths"].network
    ]
    out = []
    for key, n in zip(keys, sizes, strict=True):
        x, y = tasks.dataset(key, n, task)
        omegas = [model.attention_maps(x, W) for W in weights]
        out += [model.path_features(x, omegas, task.readout()), y]
    return tuple(out)


@pytest.fixture(scope="module")
def small_task():
    """The paper's task with P = 100 training and 400 test sequences:
    ``(phi_train (100, 231, 4), y_train, phi_test (400, 231, 4), y_test)``."""
    return _four_paths_data(TASK, (100, 400))


@pytest.fixture(scope="module")
def solution_n10(small_task):
    phi, y, *_ = small_task
    return theory.minimise_action(phi, y, (2, 2), 10, T_RIDGE)


# --- model ---------------------------------------------------------------------------------


def _tiny(key, n0=7, n_tokens=5, heads=(2, 3), batch=4):
    kx, *kw = jax.random.split(key, 1 + len(heads))
    x = jax.random.normal(kx, (batch, n0, n_tokens))
    weights = [jax.random.normal(k, (h, n0, n0)) / n0 for k, h in zip(kw, heads, strict=True)]
    return x, weights, jnp.zeros(n_tokens).at[-1].set(1.0)


@pytest.mark.slow
def test_phi_kernels_equal_materialised_path_kernels():
    """K_U through Φ = (1/Π) Σ_ππ' U_ππ' C_ππ' with every path-path kernel built explicitly."""
    x, weights, r = _tiny(jax.random.key(0))
    sigma0_sq, (n_seq, n0, _) = 1.7, x.shape
    phi = model.path_features(x, [model.attention_maps(x, W) for W in weights], r, sigma0_sq)
    xn, rn = np.asarray(x), np.asarray(r)
    omegas = [
        [
            [np.asarray(model.attention(xn[b], W[h][None])[0]) for h in range(W.shape[0])]
            for W in weights
        ]
        for b in range(n_seq)
    ]
    paths = list(itertools.product(*[range(W.shape[0]) for W in weights]))
    xi = np.array(
        [
            [xn[b] @ omegas[b][0][h1] @ omegas[b][1][h2] @ rn for h1, h2 in paths]
            for b in range(n_seq)
        ]
    )  # (B, Pi, N0)
    C = sigma0_sq / n0 * np.einsum("api,bqi->pqab", xi, xi)  # (Pi, Pi, B, B)
    U = np.asarray(jax.random.normal(jax.random.key(1), (len(paths), len(paths))))
    U = U @ U.T
    explicit = np.einsum("pq,pqab->ab", U, C) / len(paths)
    np.testing.assert_allclose(model.kernel(phi, phi, jnp.asarray(U)), explicit, rtol=1e-10)
    np.testing.assert_allclose(model.path_kernels(phi), C / len(paths), rtol=1e-10)
    np.testing.assert_allclose(
        model.kernel_diagonal(phi, jnp.asarray(U)), np.diag(explicit), rtol=1e-10
    )


@pytest.mark.slow
def test_path_form_equals_network_forward_pass():
    """f = a·z^(L) r/√Na of the layer-by-layer network equals Σ_π (V0ᵀū^π)·Φ_:π."""
    x, weights, r = _tiny(jax.random.key(2))
    N, n0 = 6, x.shape[1]
    ka, k0, *kv = jax.random.split(jax.random.key(3), 2 + len(weights))
    a, V0 = jax.random.normal(ka, (N,)), jax.random.normal(k0, (N, n0))
    values = [jax.random.normal(k, (W.shape[0], N, N)) for k, W in zip(kv, weights, strict=True)]

    def forward(xs):
        z = V0 @ xs / np.sqrt(n0)
        for W, V in zip(weights, values, strict=True):
            om = model.attention(xs, W)
            z = sum(V[h] @ z @ om[h] for h in range(W.shape[0])) / np.sqrt(W.shape[0] * N)
        return a @ z @ r / np.sqrt(N)

    phi = model.path_features(x, [model.attention_maps(x, W) for W in weights], r)
    ubar = model.suffix_vectors(a, values)[0]
    np.testing.assert_allclose(model.readout(phi, ubar @ V0), jax.vmap(forward)(x), rtol=1e-10)


@pytest.mark.slow
def test_attention_columns_sum_to_one_and_uniform_head_is_uniform():
    task = tasks.MarkovTask(tokens=12, features=40)
    x, y = tasks.dataset(jax.random.key(4), 2, task)
    om = model.attention(
        x[0],
        jnp.stack([tasks.head("uniform", task), tasks.head("random", task, jax.random.key(5))]),
    )
    np.testing.assert_allclose(om.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(om[0], 1.0 / (task.tokens + 1), rtol=1e-12)


# --- task ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_hidden_chain_statistics_and_noise_split():
    task = tasks.MarkovTask(tokens=40, features=20, sigma_perp=3.0, in_plane=0.5)
    labels = jnp.repeat(jnp.array([1.0, -1.0]), 2000)
    states = tasks.hidden_states(jax.random.key(5), labels, task)
    stay = np.asarray(states[:, 1:] == states[:, :-1])
    assert stay[:2000].mean() == pytest.approx(0.7, abs=0.01)
    assert stay[2000:].mean() == pytest.approx(0.3, abs=0.01)
    assert np.asarray(states[:, 0] > 0).mean() == pytest.approx(0.5, abs=0.03)
    x = np.asarray(tasks.sequences(jax.random.key(6), states[:200], task))
    v_plus, v_minus = task.visible()
    assert v_plus @ v_plus == pytest.approx(task.features)
    clean = np.where(
        np.asarray(states[:200])[:, None, :] > 0, v_plus[None, :, None], v_minus[None, :, None]
    )
    noise = x[:, : task.features, 1:] - clean
    e = (v_plus - v_minus) / np.linalg.norm(v_plus - v_minus)
    assert np.var(np.einsum("i,bit->bt", e, noise)) == pytest.approx(0.25, rel=0.05)
    assert np.var(noise) * task.features == pytest.approx(2 * 0.25 + 18 * 9.0, rel=0.05)
    np.testing.assert_array_equal(x[:, : task.features, 0], 0.0)  # BOS
    np.testing.assert_array_equal(x[0, task.features :], np.eye(task.tokens + 1))


@pytest.mark.slow
def test_same_token_head_attends_previous_token_or_bos():
    """Noise-free: query t attends to t-1 when both are in the same state, else mostly BOS."""
    task = tasks.MarkovTask(tokens=10, features=20, in_plane=0.0, sigma_perp=0.0)
    states = jnp.array([[1.0, 1, -1, -1, -1, 1, 1, -1, 1, 1]])
    x = tasks.sequences(jax.random.key(7), states, task)[0]
    om = np.asarray(model.attention(x, tasks.head("same", task)[None])[0])
    for t in range(2, task.tokens + 1):
        same = states[0, t - 1] == states[0, t - 2]
        assert np.argmax(om[:, t]) == (t - 1 if same else 0)


# --- theory --------------------------------------------------------------------------------


def test_minimum_is_stationary_with_positive_hessian(solution_n10):
    assert solution_n10.grad_max < 1e-6
    assert solution_n10.hessian_min > 0
    assert all(np.linalg.eigvalsh(U)[0] > 0 for U in solution_n10.Us)


def test_gradient_matches_finite_differences(small_task, solution_n10):
    """The symmetric-entry gradient of S/N (autodiff) against central differences, off the
    minimum."""
    phi, y, *_ = small_task
    Us = [U + 0.1 * np.eye(U.shape[0]) for U in solution_n10.Us]
    grad, _ = theory.stationarity(Us, phi, y, (2, 2), 10.0, T_RIDGE)
    S = lambda Us: float(theory.action(Us, phi, y, (2, 2), 10.0, T_RIDGE)) / 10.0  # noqa: E731
    h, (i, j) = 1e-5, (1, 0)
    E = np.zeros_like(Us[0])
    E[i, j] = E[j, i] = h
    numeric = (S([Us[0] + E, Us[1]]) - S([Us[0] - E, Us[1]])) / (2 * h)
    assert grad[1] == pytest.approx(numeric, rel=1e-5)  # entry (1, 0) of U^(1)


def test_ua_closed_form_equals_numerical_minimum(solution_n10):
    Us = solution_n10.Us
    for h_top, sigma2 in ((2, 1.0), (3, 0.7)):
        top = Us[1] if h_top == 2 else np.diag([0.5, 2.0, 1.3])
        heads = (2, h_top)
        hier = [np.kron(np.eye(2), top) * 1.1, top]
        f = lambda ua: float(theory.entropy(hier, ua, heads, 10.0, sigma2))  # noqa: E731, B023
        res = scipy.optimize.minimize_scalar(
            f, bounds=(1e-3, 50), method="bounded", options={"xatol": 1e-10}
        )
        closed = float(theory.ua_closed_form(np.trace(top), h_top, sigma2))
        assert closed == pytest.approx(res.x, rel=1e-6)


@pytest.mark.slow
def test_large_width_tends_to_gp_limit(small_task):
    phi, y, *_ = small_task
    gaps = []
    for N in (1e3, 1e4, 1e5):
        sol = theory.minimise_action(phi, y, (2, 2), N, T_RIDGE)
        gaps.append(max(np.abs(U - np.eye(U.shape[0])).max() for U in sol.Us))
        assert sol.hessian_min > 0
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 5e-3
    assert gaps[1] / gaps[2] == pytest.approx(10, rel=0.3)  # deviations are O(P/N)


def test_finite_width_beats_gp_by_weighting_good_path_and_subtracting_denoising(
    small_task, solution_n10
):
    phi, y, phi_test, y_test = small_task
    acc = {
        name: theory.accuracy(theory.predictor(phi, y, phi_test, U, T_RIDGE)[0], y_test)
        for name, U in (("fw", jnp.asarray(solution_n10.Us[0])), ("gp", jnp.eye(4)))
    }
    assert acc["fw"] > acc["gp"] + 0.05
    U = solution_n10.Us[0]  # paths g, a1, d, a2
    assert U[0, 0] == U.max() > 5 and U[0, 2] < -1 and max(U[1, 1], U[3, 3]) < 1


def test_predictor_variance_is_nonnegative_and_mean_weights_consistent(small_task):
    phi, y, phi_test, _ = small_task
    U = jnp.diag(jnp.array([2.0, 0.5, 1.0, 0.3]))
    mean, var = theory.predictor(phi, y, phi_test, U, T_RIDGE)
    assert float(var.min()) > -1e-10
    k = model.kernel(phi, phi_test, U)
    direct = k.T @ jnp.linalg.solve(model.kernel(phi, phi, U) + T_RIDGE * jnp.eye(100), y)
    np.testing.assert_allclose(mean, direct, rtol=1e-8, atol=1e-10)


# --- samples -------------------------------------------------------------------------------


def _prior_moments(ops: list[jax.Array]) -> tuple[np.ndarray, np.ndarray]:
    """Draws ``(n, k)`` of every order-parameter entry and of their pairwise products."""
    flat = np.concatenate([np.asarray(o).reshape(o.shape[0], -1) for o in ops], axis=1)
    return flat, (flat[:, :, None] * flat[:, None, :]).reshape(flat.shape[0], -1)


@pytest.mark.parametrize("N", [3, 6])
def test_bartlett_order_parameters_have_the_law_of_the_weights(N):
    """Under the prior, the order parameters built from the Bartlett variables
    (``sampling.bartlett_factors``) have the law of those of Gaussian weights
    (``model.suffix_vectors``): every mean and second moment of ``U^(1)``, ``U^(2)``, ``U_a``
    agrees within 5 standard errors over 20 000 draws, for N below (3) and above (6) the Π = 4
    paths. A wrong Kronecker order, scale or degree of freedom moves some moment by many."""
    heads, sigma2, n = (2, 2), 1.7, 20_000
    rng = np.random.default_rng(5)  # NumPy's draws: no program to compile per shape
    a = np.sqrt(sigma2) * rng.standard_normal((n, N))
    values = [np.sqrt(sigma2) * rng.standard_normal((n, h, N, N)) for h in heads]
    us = jax.jit(jax.vmap(model.suffix_vectors))(a, values)
    weights = [jnp.einsum("npi,nqi->npq", u, u) for u in us] + [
        jnp.sum(a**2, axis=1)[:, None, None] / N]
    chi2, normal = [], []
    for d, r in sampling.bartlett_shapes(heads, N):
        chi2.append(rng.chisquare(N - np.arange(r), (n, r)))
        normal.append(rng.standard_normal((n, len(np.tril_indices(d, -1, r)[0]))))
    factors = jax.jit(jax.vmap(lambda c, z: sampling.bartlett_factors(c, z, heads, N, sigma2)))(
        chi2, normal)
    bartlett = [jnp.einsum("nij,nkj->nik", F, F) for F in reversed(factors)]
    for ref, got in zip(_prior_moments(weights), _prior_moments(bartlett), strict=True):
        se = np.hypot(ref.std(axis=0), got.std(axis=0)) / np.sqrt(n)
        assert np.all(np.abs(ref.mean(axis=0) - got.mean(axis=0)) < 5 * se + 1e-12)
    u1 = np.asarray(bartlett[0])  # E U^(1) = sigma2^3 I_4, within 5 standard errors
    assert np.all(np.abs(u1.mean(axis=0) - sigma2**3 * np.eye(4))
                  < 5 * u1.std(axis=0) / np.sqrt(n))


@pytest.mark.slow
def test_theory_and_samples_agree_at_n10(small_task, solution_n10):
    phi, y, phi_test, y_test = small_task
    s = sampling.run_nuts(
        jax.random.key(8), phi, y, (2, 2), 10, T_RIDGE, warmup=100, samples=100, chains=2, blocks=1
    )
    sampled = theory.accuracy(model.readout(phi_test, s.mean_weights.mean(axis=0)), y_test)
    theory_acc = theory.accuracy(
        theory.predictor(phi, y, phi_test, jnp.asarray(solution_n10.Us[0]), T_RIDGE)[0], y_test
    )
    assert abs(sampled - theory_acc) <= 0.02
    U_sampled = s.order_parameters[0].mean(axis=(0, 1))
    U = solution_n10.Us[0]
    assert np.linalg.norm(U_sampled - U) / np.linalg.norm(U) < 0.2
    assert s.divergences.sum() == 0 and s.rhat < 1.1


@pytest.mark.slow
def test_the_three_samplers_agree():
    """NUTS on every weight (the paper's way), on the values (V0 integrated out) and on the
    order parameters (every weight integrated out) gives the same order parameters: an
    identity of the posterior at any size, checked on a small task (T = 8, D = 16, P = 40),
    where sampling all 10 x 25 entries of V0 is cheap."""
    phi, y = _four_paths_data(tasks.MarkovTask(tokens=8, features=16), (40,))
    runs = [
        sampling.run_nuts(
            jax.random.key(9), phi, y, (2, 2), 10, T_RIDGE, variables=v, warmup=100,
            samples=100, chains=1, blocks=1,
        )
        for v in sampling.VARIABLES
    ]
    Us = [r.order_parameters[0].mean(axis=(0, 1)) for r in runs]
    for U in Us[1:]:
        assert np.linalg.norm(U - Us[0]) / np.linalg.norm(Us[0]) < 0.2


@pytest.mark.slow
def test_nuts_programs_are_kept_per_signature_and_give_the_numbers_of_a_first_call():
    """One process sampling one posterior with other chain counts and data sizes, then again as
    first: every call runs (a kernel is initialised once per signature of keys and data) and
    the repeated call draws the same numbers to the last bit (its kept programs)."""
    task = tasks.MarkovTask(tokens=8, features=16)
    (phi, y), (phi_more, y_more) = (_four_paths_data(task, (P,)) for P in (40, 60))
    run = partial(sampling.run_nuts, heads=(2, 2), N=10, T=T_RIDGE, warmup=20, samples=20,
                  blocks=2)
    first = run(jax.random.key(3), phi, y, chains=2)
    run(jax.random.key(3), phi, y, chains=3)
    run(jax.random.key(3), phi_more, y_more, chains=2)
    again = run(jax.random.key(3), phi, y, chains=2)
    for a, b in zip(first.order_parameters, again.order_parameters, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(first.accept, again.accept)


# --- stages --------------------------------------------------------------------------------


@pytest.mark.slow
def test_stages_end_to_end(tiny_run):
    """features -> theory -> samples -> tables -> figures of both experiments, read from the
    session's tiny workflow run (``tests.workflow_runs.TINY_ALL``)."""
    cfg = load_config(yaml.safe_load((tiny_run / "tiny.yaml").read_text()))["paths"]
    results = tiny_run / "results"
    for experiment, gp_networks in (("four_paths", ["all", "g", "g+d"]),
                                    ("two_paths", ["all", "g"])):
        n_paths = len(designs.EXPERIMENTS[experiment].paths)
        folder = results / "paths" / "r0" / experiment
        th = read_artefact(folder / "theory.h5", PATHS_THEORY, required=("U/1", "U/2", "accuracy"))
        assert th["U/1"].shape == (len(cfg["widths"]), n_paths, n_paths)
        assert json.loads(th.attrs["gp_networks"]) == gp_networks
        assert np.all(th["grad_max"] < 1e-6) and np.all(th["hessian_min"] > 0)
        for width in cfg["sample_widths"]:
            sa = read_artefact(folder / f"samples_N{width}.h5", PATHS_SAMPLES,
                               required=("U/1", "accept"))
            chains, draws = cfg["sampler"]["chains"], cfg["sampler"]["samples"]
            assert sa["U/1"].shape == (chains, draws, n_paths, n_paths)
            assert 0 <= sa.attrs["accuracy"] <= 1
            assert json.loads(sa.attrs["seeds"])["width"] == width
    for panel in HMM.panels:  # both experiments: every panel of the study
        for ext in ("png", "pdf"):
            assert (results / "figures" / f"{panel.name}.{ext}").stat().st_size > 1000
