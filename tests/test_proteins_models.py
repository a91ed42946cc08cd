"""The protein study's models: factored attention with heads and fields, plmDCA, the weighted
pseudo-likelihood objective and its L-BFGS fit, the transformers' weighted MLM training to their
stop criterion, and the held-out and validation splits."""

from __future__ import annotations

import itertools
import logging
from dataclasses import fields, replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workflow_lib.core.config import load_config
from workflow_lib.mlm.plm import coupling_logits
from workflow_lib.proteins import contacts, models
from workflow_lib.proteins.alignment import Q, split_held_out
from workflow_lib.proteins.fitting import CouplingFit, TransformerFit, coupling_model, fit_model
from workflow_lib.proteins.run_names import model_names
from workflow_lib.proteins.splits import held_out_split
from workflow_lib.proteins.transformer import TransformerSettings, plateaued, train_transformer
from workflow_lib.proteins.weights import neighbour_counts, sequence_weights
from workflow_lib.studies.proteins.settings import fit_settings

LAMBDAS = models.Lambdas(couplings=0.01, factored=0.001, fields=0.01, lowrank=None)
# the fits' hyperparameters of these tests (each test replaces those it sets)
COUPLING = CouplingFit(fields=True, lambdas=replace(LAMBDAS, factored=0.01), restarts=1,
                       max_iter=50, grad_tol=1e-4, qk_rank=None, value_rank=None)
TRANSFORMER = TransformerSettings(model_dim=16, mask_token="channel", steps=20000, batch_size=64,
                                  learning_rate=0.01, eval_every=40, window=3, tol=0.01)
TRANSFORMER_FIT = TransformerFit(training=TRANSFORMER, eval_sequences=64, jacobian_sequences=4)


def _seqs(M: int, L: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, Q, (M, L)).astype(np.int32)


@pytest.mark.parametrize("heads", [1, 10, 11, 25])
@pytest.mark.parametrize("attention", ["signed", "softmax"])
def test_factored_logits_are_those_of_its_couplings(heads, attention):
    """Both contraction routes (through the heads while 2 H < Q, through J from H = 11 on) give
    the conditionals of J_ij(a, b) = sum_h A^h_ij V^h_ab plus the fields, to float32 precision,
    in float64."""
    model = models.CouplingModel("factored", 6, heads=heads, attention=attention)
    params = models.init_params(model, jax.random.key(1))
    params["h"] = jax.random.normal(jax.random.key(2), (6, Q), jnp.float64)
    seqs = jnp.asarray(_seqs(5, 6))
    att = np.asarray(models.attention(model, params))
    J = np.einsum("hij,hab->ijab", att, np.asarray(params["V"]))
    expected = np.asarray(coupling_logits(jnp.asarray(J), seqs)) + np.asarray(params["h"])
    logits = models.site_logits(model, params, seqs)
    assert logits.dtype == jnp.float64
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.diagonal(att, axis1=1, axis2=2), 0.0)
    if attention == "softmax":
        np.testing.assert_allclose(att.sum(axis=2), 1.0, atol=1e-12)


def test_a_site_does_not_condition_on_itself():
    """Changing s_i changes every conditional but site i's own."""
    model = models.CouplingModel("plmdca", 5)
    params = {"J": jax.random.normal(jax.random.key(0), (10, Q, Q), jnp.float64),
              "h": jnp.zeros((5, Q))}
    seqs = _seqs(1, 5)
    other = seqs.copy()
    other[0, 2] = (other[0, 2] + 1) % Q
    a, b = (np.asarray(models.site_logits(model, params, jnp.asarray(s))) for s in (seqs, other))
    np.testing.assert_allclose(a[0, 2], b[0, 2])
    assert not np.allclose(np.delete(a, 2, axis=1), np.delete(b, 2, axis=1))


def test_plmdca_objective_and_gradient_match_a_brute_force_reference():
    """The fitted plmDCA objective (float32 products of one-hot sequences and couplings) and its
    gradient equal a float64 reference written site by site, on a small random alignment with
    random couplings, fields and weights, to float32 tolerance."""
    M, L = 7, 5
    rng = np.random.default_rng(6)
    seqs = _seqs(M, L, seed=6)
    weights = rng.uniform(0.2, 1.0, M)
    pairs = list(zip(*np.triu_indices(L, 1), strict=True))
    params = {"J": jnp.asarray(rng.normal(0.0, 0.5, (len(pairs), Q, Q))),
              "h": jnp.asarray(rng.normal(0.0, 0.5, (L, Q)))}
    model = models.CouplingModel("plmdca", L)
    lambdas = models.Lambdas(couplings=0.03, factored=0.0, fields=0.02, lowrank=None)

    def reference(p):
        block = {}  # J_ij of every ordered pair, J_ji = J_ij^T
        for k, (i, j) in enumerate(pairs):
            block[i, j], block[j, i] = p["J"][k], p["J"][k].T
        h, total = p["h"], 0.0
        for m in range(M):
            for i in range(L):
                logits = h[i] + sum(block[i, j][:, seqs[m, j]] for j in range(L) if j != i)
                total += weights[m] * -jax.nn.log_softmax(logits)[seqs[m, i]]
        penalty = 0.02 * jnp.sum(h**2) + 0.03 * sum(jnp.sum(b**2) for b in block.values())
        return (total / weights.sum() + penalty) / L

    data = (jnp.asarray(seqs), jnp.asarray(weights), jax.tree.map(jnp.float64, lambdas))
    value, grad = jax.value_and_grad(models._objective(model))(params, data)
    ref_value, ref_grad = jax.value_and_grad(reference)(params)
    np.testing.assert_allclose(value, ref_value, rtol=1e-6)
    for name in ("J", "h"):
        np.testing.assert_allclose(grad[name], ref_grad[name], rtol=1e-5, atol=1e-7)
    assert value.dtype == jnp.float64 and grad["J"].dtype == jnp.float64

@pytest.mark.parametrize("heads", [3, 12])
def test_factored_objective_and_gradient_match_a_float64_reference(heads):
    """Factored attention's fitted objective (float32 contractions, through its heads for H = 3
    and through J for H = 12) and its gradient in A, V and h equal those of the float64
    conditionals of J = sum_h A^h V^h, with random weights, to float32 tolerance."""
    M, L = 9, 6
    rng = np.random.default_rng(8)
    seqs = jnp.asarray(_seqs(M, L, seed=8))
    weights = jnp.asarray(rng.uniform(0.2, 1.0, M))
    model = models.CouplingModel("factored", L, heads=heads)
    params = models.init_params(model, jax.random.key(4))
    params["h"] = jnp.asarray(rng.normal(0.0, 0.5, (L, Q)))
    data = (seqs, weights, jax.tree.map(jnp.float64, LAMBDAS))

    def reference(p):
        J = jnp.einsum("hij,hab->ijab", models.attention(model, p), p["V"])
        logp = jax.nn.log_softmax(coupling_logits(J, seqs) + p["h"], axis=-1)
        losses = -jnp.mean(jnp.take_along_axis(logp, seqs[..., None], axis=-1)[..., 0], axis=-1)
        return models.weighted_mean(losses, weights) + models.penalty(model, p, LAMBDAS,
                                                                      weights.sum())

    value, grad = jax.value_and_grad(models._objective(model))(params, data)
    ref_value, ref_grad = jax.value_and_grad(reference)(params)
    np.testing.assert_allclose(value, ref_value, rtol=1e-6)
    for name in ("A", "V", "h"):
        np.testing.assert_allclose(grad[name], ref_grad[name], rtol=1e-4, atol=1e-6)
    assert value.dtype == jnp.float64 and grad["A"].dtype == jnp.float64


def _lowrank_couplings(p: dict, r: int) -> np.ndarray:
    """mogwai's factored-attention couplings written out entry by entry: ``J[i, j, a, b] =
    sum_h (A^h_ij V^h_ab + A^h_ji V^h_ba) / 2`` with ``A^h_ij = exp(q^h_i . k^h_j / sqrt r) /
    sum_{k != i} exp(q^h_i . k^h_k / sqrt r)`` for ``j != i`` (0 for ``j = i``) and ``V^h_ab =
    sum_d W_V^h[a, d] W_O^h[d, b]``."""
    query, key, value, output = (np.asarray(p[k]) for k in ("query", "key", "value", "output"))
    H, L, _ = query.shape
    q, d_v = value.shape[1:]
    A = np.zeros((H, L, L))
    for h, i in itertools.product(range(H), range(L)):
        e = {j: np.exp(sum(query[h, i, t] * key[h, j, t] for t in range(r)) / np.sqrt(r))
             for j in range(L) if j != i}
        for j, x in e.items():
            A[h, i, j] = x / sum(e.values())
    V = np.zeros((H, q, q))
    for h, a, b in itertools.product(range(H), range(q), range(q)):
        V[h, a, b] = sum(value[h, a, d] * output[h, d, b] for d in range(d_v))
    J = np.zeros((L, L, q, q))
    for h, i, j in itertools.product(range(H), range(L), range(L)):
        J[i, j] += (A[h, i, j] * V[h] + A[h, j, i] * V[h].T) / 2
    return J


@pytest.mark.parametrize("heads", [2, 11])
def test_lowrank_couplings_are_mogwais_formula(heads):
    """mogwai's form (L = 5, query and key rank r = 2, value rank 3, the project's Q = 21
    states): the couplings tensor (L, L, Q, Q) equals the formula written out, symmetric with
    zero diagonal blocks, and both contraction routes (2 H = 4 terms through the heads, 22
    through J) give its conditionals plus the fields."""
    L = 5
    model = models.CouplingModel("factored", L, heads=heads, attention="lowrank", qk_rank=2,
                                 value_rank=3)
    params = models.init_params(model, jax.random.key(5))
    params["h"] = jax.random.normal(jax.random.key(6), (L, Q), jnp.float64)
    expected = _lowrank_couplings(params, 2)
    J = np.asarray(models.couplings(model, params))
    assert J.shape == (L, L, Q, Q)
    np.testing.assert_allclose(J, expected, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(J, J.transpose(1, 0, 3, 2), atol=1e-15)
    assert not J[np.arange(L), np.arange(L)].any()
    seqs = jnp.asarray(_seqs(6, L, seed=9))
    logits = models.site_logits(model, params, seqs)
    reference = np.asarray(coupling_logits(jnp.asarray(expected), seqs)) + np.asarray(params["h"])
    np.testing.assert_allclose(logits, reference, rtol=1e-5, atol=1e-6)


def test_lowrank_fit_lowers_its_objective_and_scores_its_couplings():
    """A fit of ``factored_lowrank-H2`` (r = 2, value rank 3) on 40 weighted sequences of L = 5
    (site 3 copies site 0) lowers its objective from its start; its objective at the fitted
    parameters is the reference one, the weighted pseudo-likelihood of the formula's couplings
    plus GREMLIN's penalty ``lambda_e (L - 1) (Q - 1) / (2 M_eff) ||J||^2`` and ``lambda_h
    ||h||^2``, over L; its contact scores are the APC-corrected Frobenius norms of those
    couplings (``contacts.contact_scores``); ``n_params`` counts its stored parameters."""
    L, M, r = 5, 40, 2
    rng = np.random.default_rng(11)
    seqs = rng.integers(0, 4, (M, L)).astype(np.int32)
    seqs[:, 3] = seqs[:, 0]
    weights = rng.uniform(0.5, 1.0, M)
    settings = replace(COUPLING, lambdas=replace(COUPLING.lambdas, lowrank=0.01), max_iter=60,
                       grad_tol=1e-6, qk_rank=r, value_rank=3)
    key = jax.random.key(3)
    res = fit_model("factored_lowrank-H2", settings, (seqs, weights), (seqs[:8], weights[:8]),
                    seqs[:0], key)

    def reference(p):
        J, h, total = _lowrank_couplings(p, r), np.asarray(p["h"]), 0.0
        for m, i in itertools.product(range(M), range(L)):
            logits = h[i] + sum(J[i, j][:, seqs[m, j]] for j in range(L) if j != i)
            total += weights[m] * (np.log(np.exp(logits).sum()) - logits[seqs[m, i]])
        m_eff = weights.sum()
        penalty = 0.01 * np.sum(h**2) + 0.01 * (L - 1) * (Q - 1) / (2 * m_eff) * np.sum(J**2)
        return (total / m_eff + penalty) / L

    model = coupling_model("factored_lowrank-H2", L, fields=True, qk_rank=r, value_rank=3)
    start = models.init_params(model, jax.random.split(key, 1)[0])
    fitted = {k: res.params[k] for k in ("query", "key", "value", "output", "h")}
    np.testing.assert_allclose(res.metrics["objective"], reference(fitted), rtol=1e-5)
    assert res.metrics["objective"] < reference(start) - 0.1
    np.testing.assert_allclose(res.scores, contacts.contact_scores(_lowrank_couplings(fitted, r)),
                               rtol=1e-6, atol=1e-9)
    assert res.metrics["n_params"] == 2 * (2 * L * r + 2 * Q * 3) + L * Q


def test_plmdca_couplings_are_symmetric_blocks_of_the_pairs():
    """``J[i, j] = T[p]`` and ``J[j, i] = T[p]^T`` for the pairs ``i < j`` in
    ``np.triu_indices`` order, zero diagonal blocks; one parameter block per pair."""
    L = 4
    model = models.CouplingModel("plmdca", L)
    T = np.random.default_rng(2).normal(size=(L * (L - 1) // 2, Q, Q))
    J = np.asarray(models.couplings(model, {"J": jnp.asarray(T)}))
    for k, (i, j) in enumerate(zip(*np.triu_indices(L, 1), strict=True)):
        np.testing.assert_array_equal(J[i, j], T[k])
        np.testing.assert_array_equal(J[j, i], T[k].T)
    assert not J[np.arange(L), np.arange(L)].any()
    assert models.init_params(model, jax.random.key(0))["J"].shape == T.shape
    assert model.n_params() == T.size + L * Q


def test_integer_weights_are_repeated_sequences():
    """The weighted loss with weight k on a sequence equals the plain loss with k copies."""
    model = models.CouplingModel("factored", 4, heads=2)
    params = models.init_params(model, jax.random.key(3))
    seqs = _seqs(3, 4, seed=4)
    weights = np.array([1.0, 3.0, 2.0])
    repeated = np.repeat(seqs, weights.astype(int), axis=0)
    weighted = models.weighted_loss(model, params, jnp.asarray(seqs), jnp.asarray(weights))
    plain = jnp.mean(models.site_losses(model, params, jnp.asarray(repeated)))
    np.testing.assert_allclose(weighted, plain, rtol=1e-12)


def test_penalty_follows_plmdca_convention():
    """lambda_h ||h||^2 + lambda_J ||J||^2 (off-diagonal J), divided by L; factored: lambda on
    A and V."""
    L = 3
    full = models.CouplingModel("plmdca", L)
    p = {"J": jnp.ones((L * (L - 1) // 2, Q, Q)), "h": jnp.full((L, Q), 2.0)}
    expected = (0.01 * 4 * L * Q + 0.01 * L * (L - 1) * Q * Q) / L
    np.testing.assert_allclose(models.penalty(full, p, LAMBDAS, 7.0), expected)
    fac = models.CouplingModel("factored", L, heads=2, fields=False)
    q = {"A": jnp.ones((2, L, L)), "V": jnp.ones((2, Q, Q))}
    np.testing.assert_allclose(models.penalty(fac, q, LAMBDAS, 7.0),
                               0.001 * 2 * (L * L + Q * Q) / L)


def test_plmdca_recovers_a_planted_coupling():
    """Sequences where sites 0 and 3 always agree and the rest are random: plmDCA's strongest
    coupling is (0, 3), with converged L-BFGS."""
    rng = np.random.default_rng(5)
    seqs = rng.integers(0, 4, (300, 5)).astype(np.int32)
    seqs[:, 3] = seqs[:, 0]
    model = models.CouplingModel("plmdca", 5)
    fit = models.fit(model, seqs, np.ones(300), LAMBDAS, jax.random.key(0), 1, 500, 1e-5)
    assert fit.converged
    J = np.asarray(models.couplings(model, fit.params))
    norms = np.linalg.norm(J, axis=(2, 3)) + np.linalg.norm(J, axis=(2, 3)).T
    i, j = np.unravel_index(np.argmax(norms), norms.shape)
    assert {int(i), int(j)} == {0, 3}
    start = models.init_params(model, jax.random.key(0))
    data = (jnp.asarray(seqs), jnp.ones(300))
    value = float(models.weighted_loss(model, start, *data))
    assert fit.objective < value


def test_model_names_and_parameter_counts():
    names = model_names(["plmdca", "factored", "vanilla1"], ["signed", "softmax", "lowrank"],
                        [4, 1])
    assert names == ["plmdca", "factored-H1", "factored-H4", "factored_softmax-H1",
                     "factored_softmax-H4", "factored_lowrank-H1", "factored_lowrank-H4",
                     "vanilla1"]
    sizes = {"fields": True, "qk_rank": 3, "value_rank": 5}  # the ranks: lowrank's alone
    model = coupling_model("factored_softmax-H4", 10, **sizes)
    assert (model.heads, model.attention, model.n_params()) == (4, "softmax",
                                                                4 * (90 + Q * Q) + 10 * Q)
    lowrank = coupling_model("factored_lowrank-H4", 10, **sizes)
    assert (lowrank.heads, lowrank.attention, lowrank.qk_rank, lowrank.value_rank) == (
        4, "lowrank", 3, 5)
    # queries and keys (L x r), W_V (Q x d_v) and W_O (d_v x Q) per head, and the fields
    assert lowrank.n_params() == 4 * (2 * 10 * 3 + 2 * Q * 5) + 10 * Q
    stored = models.init_params(lowrank, jax.random.key(0))
    assert lowrank.n_params() == sum(x.size for x in stored.values())
    assert coupling_model("plmdca", 10, **sizes).n_params() == 45 * Q * Q + 10 * Q  # a block a pair
    with pytest.raises(ValueError, match="unknown protein model"):
        coupling_model("factored-Hx", 10, **sizes)
    with pytest.raises(ValueError, match="needs its ranks"):
        coupling_model("factored_lowrank-H4", 10, fields=True, qk_rank=None, value_rank=None)


def _copied_site(M: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sequences over 4 states whose site 5 copies site 1; rows 0-79 held out, 80-159 for
    validation: ``(seqs, test, validation)``."""
    seqs = np.random.default_rng(6).integers(0, 4, (M, 6)).astype(np.int32)
    seqs[:, 5] = seqs[:, 1]
    test, validation = np.zeros(M, bool), np.zeros(M, bool)
    test[:80], validation[80:160] = True, True
    return seqs, test, validation


def test_transformer_learns_a_copied_site_and_stops_on_its_plateau(caplog):
    """The 1-layer transformer trained by weighted MLM predicts a site copied from another
    better than chance and stops on the plateau of its validation loss well before its budget,
    keeping the parameters of its lowest validation loss; its held-out loss and attention map
    have the promised shapes, its curve one point per evaluation, and it reports progress at
    every evaluation."""
    seqs, test, validation = _copied_site()
    train = ~(test | validation)
    with caplog.at_level(logging.INFO, logger="workflow_lib.proteins"):
        res = fit_model("vanilla1", TRANSFORMER_FIT, (seqs[train], np.ones(train.sum())),
                        (seqs[validation], np.ones(80)), seqs[test], jax.random.key(0))
    steps = [r.getMessage().split()[1] for r in caplog.records if r.getMessage().startswith("step")]
    n = len(res.curve["step"])
    assert steps == [f"{k}/20000" for k in range(40, 40 * n + 1, 40)]
    assert res.metrics["converged"] and res.metrics["steps"] == 40 * n < 20000
    np.testing.assert_array_equal(res.curve["step"], 40 * np.arange(1, n + 1))
    assert res.validation_loss == res.curve["validation_loss"].min()
    assert res.metrics["best_step"] == res.curve["step"][np.argmin(res.curve["validation_loss"])]
    assert res.test_losses.shape == (80,) and res.scores.shape == (6, 6)
    assert res.train_loss < np.log(4)  # chance over the 4 used states: log 4 nats per site
    np.testing.assert_allclose(res.scores, res.scores.T)


def test_a_transformer_at_its_budget_is_not_converged():
    """A budget too short for the criterion (fewer evaluations than its window) ends the run
    unconverged, the curve reaching the budget."""
    seqs, test, validation = _copied_site()
    train = ~(test | validation)
    run = train_transformer("vanilla1", replace(TRANSFORMER, steps=130),
                            (seqs[train], np.ones(train.sum())), (seqs[validation], np.ones(80)),
                            jax.random.key(0))
    assert not run.stopped and run.budget == 120
    np.testing.assert_array_equal(run.step, [40, 80, 120])
    assert run.best_step == run.step[np.argmin(run.validation_loss)]


def test_the_stop_criterion_stops_a_plateau_not_an_improving_run():
    """Validation losses that fall and then stay flat stop once the window has seen no relative
    improvement of tol; losses still falling by more than tol per window never stop; later
    (unfilled) entries are ignored."""
    window, tol = 3, 0.01
    flat = jnp.array([2.0, 1.5, 1.2, 1.1, 1.1, 1.099, 1.1, 1.1, 1.1, 1.1])
    stops = [bool(plateaued(flat, n, window, tol)) for n in range(1, 11)]
    assert stops == [False] * 6 + [True] * 4  # the window after 1.1 (eval 4): evals 5-7
    falling = 2.0 * 0.97 ** jnp.arange(30.0)  # 3 % per evaluation: 9 % per window
    assert not any(bool(plateaued(falling, n, window, tol)) for n in range(1, 31))
    assert not bool(plateaued(flat.at[6:].set(jnp.nan), 6, window, tol))
    assert not bool(plateaued(flat.at[6:].set(0.0), 6, window, tol))


def test_held_out_split_drops_near_copies_and_weighs_each_part():
    """A held-out or validation sequence identical to a training one is dropped from its set;
    the fitted, validation and held-out rows are disjoint, no kept validation row is within the
    identity of a fitted row; the weights are computed within each part."""
    rng = np.random.default_rng(7)
    seqs = rng.integers(0, Q, (80, 10)).astype(np.int32)
    seqs[1::2] = seqs[::2]  # 40 pairs of identical sequences
    split = held_out_split(seqs, 0.25, 0.8, 3, 0.3, 4)
    parts = (split.train, split.validation, split.test)
    assert all(part.any() for part in parts)
    assert sum(part.astype(int) for part in parts).max() == 1  # pairwise disjoint
    training = np.ones(80, bool)
    training[split_held_out(80, 0.25, 3)[1]] = False
    assert not (split.test & training).any() and not ((split.train | split.validation)
                                                      & ~training).any()
    # no kept held-out row within identity of a training row, no validation one of a fitted row
    assert np.all(neighbour_counts(seqs[split.test], seqs[training], 0.8) == 0)
    assert np.all(neighbour_counts(seqs[split.validation], seqs[split.train], 0.8) == 0)
    assert split.dropped > 0 and split.validation_dropped > 0
    assert split.dropped + split.test.sum() == 20  # round(0.25 * 80) held out
    assert split.validation_dropped + split.validation.sum() == 18  # round(0.3 * 60)
    for part in parts:
        np.testing.assert_allclose(split.weights[part], sequence_weights(seqs[part], 0.8))
    np.testing.assert_array_equal(split.weights[~(split.train | split.validation | split.test)],
                                  0.0)
    # the held-out rows do not depend on the validation split
    other = held_out_split(seqs, 0.25, 0.8, 3, 0.1, 5)
    np.testing.assert_array_equal(other.test, split.test)


def test_the_fit_settings_take_each_value_from_the_slice_of_its_rule():
    """``settings.fit_settings`` builds the hyperparameters of every split and final fit from the
    slice of ``proteins`` that the fit's rule passes (each value distinct here): a transformer's
    from ``transformer``, every key of it; a coupling model's from the L-BFGS fit's keys, with
    ``lowrank``'s ranks and lambda_e for that form alone."""
    from workflow_lib.studies.proteins.registry import STUDY

    transformer = {"model_dim": 8, "mask_token": "zero", "steps": 100, "batch_size": 9,
                   "learning_rate": 0.5, "eval_every": 10, "window": 2, "tol": 0.6,
                   "eval_sequences": 11, "jacobian_sequences": 12}
    cfg = load_config({"proteins": {
        "attention": ["signed", "lowrank"], "heads": [2], "fields": False, "restarts": 3,
        "max_iter": 7, "grad_tol": 1e-3, "lambdas": {"fields": 0.1, "couplings": 0.2,
                                                    "factored": 0.3},
        "lowrank": {"qk_rank": 4, "value_rank": 5, "lambda": 0.4}, "transformer": transformer}})
    lambdas = models.Lambdas(couplings=0.2, factored=0.3, fields=0.1, lowrank=None)
    coupling = CouplingFit(fields=False, lambdas=lambdas, restarts=3, max_iter=7, grad_tol=1e-3,
                           qk_rank=None, value_rank=None)
    lowrank = replace(coupling, lambdas=replace(lambdas, lowrank=0.4), qk_rank=4, value_rank=5)
    vanilla = TransformerFit(
        training=TransformerSettings(model_dim=8, mask_token="zero", steps=100, batch_size=9,
                                     learning_rate=0.5, eval_every=10, window=2, tol=0.6),
        eval_sequences=11, jacobian_sequences=12)
    expected = {"factored-H2": coupling, "factored_lowrank-H2": lowrank, "plmdca": coupling,
                "vanilla1": vanilla, "vanilla3": vanilla}
    prot = cfg["proteins"]
    assert model_names(prot["models"], prot["attention"], prot["heads"]) == list(expected)
    rules = {rule.name: rule for rule in STUDY.rules}
    for name, settings in expected.items():
        split = rules["protein_fit"].params(cfg, {"family": "FAM", "model": name, "r": "0"})
        assert fit_settings(name, split["proteins"]) == settings
    family = prot["families"][0]["name"]
    final = rules["protein_final_fit"].params(cfg, {"family": family, "model": "factored"})
    for name in ("factored-H2", "factored_lowrank-H2"):  # the configurations it may take
        assert fit_settings(name, final["proteins"]) == expected[name]
    assert set(transformer) == {f.name for f in fields(TransformerSettings)} | {
        "eval_sequences", "jacobian_sequences"}
