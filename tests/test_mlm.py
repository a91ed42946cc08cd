"""Tests of the MLM models, training and pseudo-likelihood baselines (workflow_lib.mlm)."""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import workflow_lib  # noqa: F401  (enables float64)
from workflow_lib.core.artefacts import read_artefact, write_artefact
from workflow_lib.core.config import schema_defaults
from workflow_lib.core.registry import Job
from workflow_lib.mlm import batching, lbfgs, loop, metrics, models, objective, plm, train
from workflow_lib.mlm.compiled import CompiledRuns
from workflow_lib.mlm.options import TrainingOptions
from workflow_lib.mlm.plan import Plan
from workflow_lib.mlm.progress import Progress
from workflow_lib.potts import sequences
from workflow_lib.potts.artefact import POTTS_SAMPLES
from workflow_lib.potts.model import (
    exact_distribution,
    optimal_loss,
    random_colour_couplings,
    random_couplings,
)
from workflow_lib.studies.potts_paper import stages_fits, tables
from workflow_lib.studies.potts_paper.artefacts import MLM_TRAIN

jax.config.update("jax_enable_x64", True)  # explicit, in case this module runs first

L, C, BETA = 6, 4, 1.2
FAST = {"optimizer": "adam", "learning_rate": 0.05, "epochs": 40, "batch_size": 100, "restarts": 4}
# restarts: about one random start in three ends in a local minimum ~2 % above on this instance


def fast(**overrides) -> TrainingOptions:
    """The options of ``FAST`` with ``overrides`` (the rest: the schema's defaults)."""
    return TrainingOptions(**(FAST | overrides))


def plm_options(kind: str, **overrides) -> plm.PLMOptions:
    """The ``plm`` stage's options of fit ``kind`` at the schema's defaults, with
    ``overrides``."""
    return replace(stages_fits.plm_options(kind, schema_defaults("plm")), **overrides)


@pytest.fixture(scope="module")
def potts():
    """Exact samples of a tiny generalised Potts model: 3000 train, 2000 test sequences."""
    J = random_couplings(jax.random.key(1), L)
    U = random_colour_couplings(jax.random.key(2), C)
    configs, probs, _ = exact_distribution(J, U, BETA)
    seqs = configs[np.random.default_rng(0).choice(len(probs), 5000, p=probs)]
    return seqs[:3000], seqs[3000:], np.asarray(J), np.asarray(U)


def _random_seqs(key: int, n: int, L: int = 5, C: int = 3) -> jax.Array:
    return jax.random.randint(jax.random.key(key), (n, L), 0, C)


def _brute_force_nll(A: np.ndarray, V: np.ndarray, seqs: np.ndarray) -> float:
    """Negative pseudo-log-likelihood per site with couplings J_ij(a, b) = A_ij V_ab, by loops."""
    M, L = seqs.shape
    C = V.shape[0]
    total = 0.0
    for m in range(M):
        for i in range(L):
            field = [sum(A[i, j] * V[a, seqs[m, j]] for j in range(L) if j != i) for a in range(C)]
            total -= field[seqs[m, i]] - np.log(np.sum(np.exp(field)))
    return total / (M * L)


@pytest.mark.slow
def test_factored_loss_is_pseudo_likelihood():
    spec = models.ArchSpec("factored", 5, 3)
    kA, kV = jax.random.split(jax.random.key(3))
    A = jax.random.normal(kA, (5, 5), jnp.float64)  # random diagonal too: it must be ignored
    V = jax.random.normal(kV, (3, 3), jnp.float64)
    seqs = _random_seqs(4, 7)
    expected = _brute_force_nll(np.asarray(A) * (1 - np.eye(5)), np.asarray(V), np.asarray(seqs))
    params = {"A": A, "V": V}
    np.testing.assert_allclose(float(objective.full_loss(spec, params, seqs)), expected, rtol=1e-13)
    # unconstrained couplings of the PLM baseline, set to the factored ones
    couplings = jnp.einsum("ij,ab->ijab", A, V)
    loss_full = models.cross_entropy(plm.coupling_logits(couplings, seqs), seqs)
    np.testing.assert_allclose(float(loss_full), expected, rtol=1e-13)
    # the PLM objective over the distinct sequences, weighted by their frequencies (and padded to
    # a shared length by rows of weight 0)
    more = _random_seqs(8, 3000)  # every one of the 3**5 sequences
    for repeated, n_distinct in ((jnp.concatenate([seqs, seqs[:3], seqs[:1]]), 7),
                                 (more, 3**5)):  # fmt: skip
        distinct, weights = plm.distinct_with_weights(np.asarray(repeated), 3)
        assert len(np.unique(repeated, axis=0)) == n_distinct
        # padded to the smallest length whose evaluation costs more than its overhead
        assert len(distinct) == plm.padded_length(-(-plm.PAD_WORK // (5 * 5 * 3))) == 896
        assert weights.sum() == pytest.approx(1.0) and np.sum(weights > 0) == n_distinct
        for kind, p in (("factored", params), ("full", {"J": couplings})):
            np.testing.assert_allclose(
                float(plm._data_loss(kind, spec, p, jnp.asarray(distinct), jnp.asarray(weights))),
                float(plm._data_loss(kind, spec, p, repeated)), rtol=1e-13)
    assert [plm.padded_length(n) for n in (1, 15, 16, 17, 31, 33, 1843, 1851)] == \
        [1, 15, 16, 18, 32, 36, 1920, 1920]
    assert plm.padded_length(5, min_rows=17) == plm.padded_length(17) == 18
    # one masked site per sequence agrees with the all-sites form
    sites = jnp.arange(7) % 5
    logits, rows = models.predict(spec, params, seqs, sites)
    all_logits, _ = models.predict_all_sites(spec, params, seqs)
    np.testing.assert_array_equal(logits, all_logits[jnp.arange(7), sites])
    np.testing.assert_array_equal(rows, (A * (1 - jnp.eye(5)))[sites])


@pytest.mark.slow
def test_interpolated_at_zero_is_factored_exactly():
    spec_i = models.arch_spec("interpolated", L, C, a=0.0)
    spec_f = models.arch_spec("factored", L, C)
    params = models.init(spec_i, jax.random.key(5), jnp.float64)
    params = {**params, "A": params["A"] + 0.3}  # non-zero diagonal: A_ii must drop out at a = 0
    factored = {"A": params["A"], "V": params["V"]}
    init_f = models.init(spec_f, jax.random.key(5), jnp.float64)
    np.testing.assert_array_equal(init_f["V"], params["V"])
    seqs = _random_seqs(6, 11, L, C)
    for got, want in zip(
        models.predict_all_sites(spec_i, params, seqs),
        models.predict_all_sites(spec_f, factored, seqs),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_interpolated_matches_explicit_token_model():
    """a > 0 against the (L + C)-dim token model of spec §2.1 written out with explicit vectors."""
    a = 0.37
    spec = models.arch_spec("interpolated", L, C, a=a)
    p = models.init(spec, jax.random.key(7), jnp.float64)
    p = {**p, "A": p["A"] + 0.2 * jnp.eye(L)}  # A_ii matters for a > 0
    rng = np.random.default_rng(8)
    # W = W_Q^T W_K over token space (positions first): the colour rows are arbitrary
    W = np.block([[np.asarray(p["A"]), np.asarray(p["A_col"])], [rng.normal(size=(C, L + C))]])
    Wv = np.concatenate([np.asarray(p["V_pos"]), np.asarray(p["V"])], axis=1)  # (C, L + C)
    seqs = np.asarray(_random_seqs(9, 4, L, C))
    logits, rows = models.predict(spec, p, jnp.asarray(seqs), jnp.arange(4))
    for b, s in enumerate(seqs):
        i = b
        e = np.eye(C)[s]
        e[i] = 0.0  # mask token: zero colour vector
        pos = np.eye(L)
        x_att = np.concatenate([pos, a * e], axis=1)
        x_val = np.concatenate([a * pos, e], axis=1)
        scores = x_att @ W.T @ x_att[i]  # scores[j] = x_att_i^T W x_att_j
        want = sum(scores[j] * Wv @ x_val[j] for j in range(L))
        np.testing.assert_allclose(logits[b], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.delete(rows[b], i), np.delete(scores, i), rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["vanilla1", "vanilla3"])
@pytest.mark.parametrize("mask_token", ["channel", "zero"])
def test_transformer_shapes_attention_and_masking(arch, mask_token):
    spec = models.arch_spec(arch, L, C, model_dim=8, mask_token=mask_token)
    params = models.init(spec, jax.random.key(10))
    seqs = _random_seqs(11, 9, L, C)
    sites = jnp.arange(9) % L
    logits, rows = models.predict(spec, params, seqs, sites)
    assert logits.shape == (9, C) and rows.shape == (9, L)
    np.testing.assert_allclose(rows.sum(axis=-1), 1.0, rtol=1e-5)
    _, att = models.transformer_forward(spec, params, seqs, sites)
    assert att.shape == (spec.n_layers, 9, L, L)
    np.testing.assert_allclose(att.sum(axis=-1), 1.0, rtol=1e-5)
    masked_rows = att[-2:, jnp.arange(9), sites].mean(axis=0)  # layer 0, or the last two layers
    np.testing.assert_allclose(masked_rows, rows, rtol=1e-6)
    # the masked colour never leaks: overwrite it and nothing changes
    changed = seqs.at[jnp.arange(9), sites].set((seqs[jnp.arange(9), sites] + 1) % C)
    np.testing.assert_array_equal(models.predict(spec, params, changed, sites)[0], logits)
    all_logits, att = models.predict_all_sites(spec, params, seqs)
    assert all_logits.shape == (9, L, C) and att.shape == (L, L)
    np.testing.assert_allclose(att.sum(axis=-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(all_logits[jnp.arange(9), sites], logits, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("arch", ["factored", "factored_softmax", "interpolated"])
def test_factored_family_masking(arch):
    spec = models.arch_spec(arch, L, C, a=0.5)
    params = models.init(spec, jax.random.key(12))
    seqs = _random_seqs(13, 9, L, C)
    sites = jnp.arange(9) % L
    logits, rows = models.predict(spec, params, seqs, sites)
    changed = seqs.at[jnp.arange(9), sites].set((seqs[jnp.arange(9), sites] + 1) % C)
    np.testing.assert_array_equal(models.predict(spec, params, changed, sites)[0], logits)
    if arch == "factored_softmax":
        np.testing.assert_allclose(rows.sum(axis=-1), 1.0, rtol=1e-6)


def test_reconstruction_metric():
    J = np.asarray(random_couplings(jax.random.key(14), L))
    error, r, c = metrics.reconstruction(jnp.asarray(-2.0 * J + 5.0 * np.eye(L)), jnp.asarray(J))
    np.testing.assert_allclose([float(error), float(r), float(c)], [0.0, -1.0, -0.5], atol=1e-12)


def test_all_sites_epoch_visits_every_pair_once():
    spec = models.arch_spec("vanilla1", L, C)
    plan = Plan(epochs=1, steps=12 * L // 8, all_sites=True, batch=8, restarts=1, l2=0.0,
                eval_every=1, log_every=1)  # fmt: skip
    key = jax.random.key(3, impl=loop.PRNG_IMPL)
    idx, sites = batching.epoch_batches(spec, plan, key, 12)
    assert idx.shape == sites.shape == (plan.steps, 8)
    pairs = np.sort(np.asarray(idx * L + sites).ravel())
    np.testing.assert_array_equal(pairs, np.arange(12 * L))  # all 12 x L pairs, each once


def test_shuffle_is_a_permutation():
    k1, k2 = jax.random.split(jax.random.key(0, impl=loop.PRNG_IMPL))
    a, b = np.asarray(batching.shuffle(k1, 3000)), np.asarray(batching.shuffle(k2, 3000))
    np.testing.assert_array_equal(np.sort(a), np.arange(3000))
    assert a.dtype == np.int32 and not np.array_equal(a, b)


@pytest.mark.parametrize("arch", ["factored", "vanilla1"])
def test_training_loop_is_float32(arch):
    """float64 (optimal loss, final c* fit) stays outside the training epochs."""
    spec = models.arch_spec(arch, L, C, model_dim=8)
    plan = Plan(epochs=2, steps=2, all_sites=False, batch=10, restarts=2, l2=0.0,
                eval_every=1, log_every=1)  # fmt: skip
    seqs = np.zeros((1, 20, L), np.int32)  # one problem
    J = np.zeros((1, L, L))
    opt = train.make_optimizer("adam", 0.1, 4)
    begin = partial(loop._begin, spec, opt, plan)
    start = (jax.random.key(0)[None], seqs, J, np.zeros((1, C, C)), np.full(1, BETA))
    _, carry, keys = jax.eval_shape(begin, *start)
    epochs = jax.make_jaxpr(partial(loop._epochs, spec, opt, plan, 2))(
        carry, np.int32(0), keys, seqs, seqs, np.ones((1, 20), np.float32), J.astype(np.float32))
    finish = jax.make_jaxpr(partial(loop._finish, spec))(carry[0][0], carry[1], seqs, J)
    assert "f64" not in str(epochs) and "scan" in str(epochs)
    assert "f64" in str(jax.make_jaxpr(begin)(*start)) and "f64" in str(finish)


def test_epochs_run_in_calls_of_log_every_the_remainder_last():
    """A run's epochs go in compiled calls of ``log_every`` epochs (a progress line after each),
    the remainder last."""
    plan = Plan(epochs=23, steps=2, all_sites=False, batch=10, restarts=1, l2=0.0,
                eval_every=2, log_every=6)  # fmt: skip
    assert loop.chunks(plan) == [6, 6, 6, 5]
    assert loop.chunks(plan._replace(epochs=12)) == [6, 6]


def _bowl(x: jax.Array, data: jax.Array) -> jax.Array:
    return jnp.sum((data @ x - 1.0) ** 2)


def test_compiled_programs_hold_no_host_callback():
    """JAX's persistent compilation cache cannot keep a program that calls back into Python (the
    callback's address is part of the program): the training epochs and the L-BFGS iterations
    call none, so a job finds them compiled by an earlier one (progress lines come from the
    host between calls)."""
    spec = models.arch_spec("vanilla1", L, C, model_dim=8)
    plan = Plan(epochs=4, steps=2, all_sites=False, batch=10, restarts=2, l2=0.0,
                eval_every=1, log_every=2)  # fmt: skip
    seqs, J = np.zeros((1, 20, L), np.int32), np.zeros((1, L, L))
    opt = train.make_optimizer("adam", 0.1, 8)
    _, carry, keys = jax.eval_shape(partial(loop._begin, spec, opt, plan), jax.random.key(0)[None],
                                    seqs, J, np.zeros((1, C, C)), np.full(1, BETA))
    epochs = jax.jit(partial(loop._epochs, spec, opt, plan, 2)).lower(
        carry, np.int32(0), keys, seqs, seqs, np.ones((1, 20), np.float32), J.astype(np.float32))
    x0, data = jnp.zeros(3), jnp.eye(3)
    start = lbfgs._start(_bowl, x0, data, 10, 1e-8, 5)
    iterations = lbfgs._advance.lower(_bowl, start, data, 5, 10, 1e-8, 0.0,
                                      1, np.inf, 5)
    for program in (epochs, iterations):
        assert "callback" not in program.as_text()


@pytest.mark.slow
def test_factored_training_reaches_optimum_and_agrees_with_plm(potts):
    train_seqs, test_seqs, J, U = potts
    key = jax.random.key(15)
    adam = train.train_mlm("factored", fast(), train_seqs, test_seqs, J, U, BETA, key)
    sgd_options = fast(optimizer="sgd", learning_rate=2.0)
    sgd = train.train_mlm("factored", sgd_options, train_seqs, test_seqs, J, U, BETA, key)
    # 4 restarts: with the schema's 2, both starts end in a local minimum here (r = 0.92)
    lucky = plm.fit_plm("factored", plm_options("factored", restarts=4, start="random"),
                        train_seqs, test_seqs, J, U, BETA, key)  # fmt: skip
    fit = plm.fit_plm("factored", plm_options("factored"), train_seqs, test_seqs, J, U, BETA,
                      key)  # spectral start
    full = plm.fit_plm("full", plm_options("full", l2=1e-3), train_seqs, test_seqs, J, U, BETA,
                       key)
    floor = plm.fit_plm("factored_from_truth", plm_options("factored_from_truth"), train_seqs,
                        test_seqs, J, U, BETA, key)
    # the floor fit descends from the truth; on these well-sampled data the random starts reach
    # the same minimum
    assert floor.metrics["train_loss"] <= float(optimal_loss(train_seqs, J, U, BETA))
    for res in (fit, lucky):
        np.testing.assert_allclose(res.metrics["train_loss"], floor.metrics["train_loss"],
                                   rtol=1e-4)  # fmt: skip
    assert (fit.metrics["start"], lucky.metrics["start"]) == ("spectral", "random")
    assert floor.metrics["converged"] and floor.metrics["start"] == "truth"
    optimum = adam.optimal_loss
    assert 0.8 < optimum < 0.98 * np.log(C)  # informative data
    for res in (adam, sgd, fit, full):
        assert res.metrics["test_loss"] < 1.03 * optimum
        assert abs(res.metrics["pearson_r"]) > 0.95
    assert len(adam.history["test_loss"]) == FAST["epochs"]
    assert adam.history["test_loss"][-1] < adam.history["test_loss"][0]
    off = ~np.eye(L, dtype=bool)
    for res in (adam, sgd):  # equal up to gauge: attention maps are already scale-fitted to J
        assert np.corrcoef(res.attention[off], fit.attention[off])[0, 1] > 0.99
        np.testing.assert_allclose(res.metrics["train_loss"], fit.metrics["train_loss"], rtol=2e-3)
    assert fit.params["A"].shape == (L, L) and full.params["J"].shape == (L, L, C, C)


@pytest.mark.slow
def test_spectral_and_random_starts_keep_the_lowest_objective(potts):
    train_seqs, test_seqs, J, U = potts
    key = jax.random.key(15)
    fits = {start: plm.fit_plm("factored", plm_options("factored", restarts=2, start=start),
                               train_seqs, test_seqs, J, U, BETA, key)
            for start in ("spectral", "random", "spectral_and_random")}  # fmt: skip
    objective = {start: f.metrics["objective"] for start, f in fits.items()}
    both = fits["spectral_and_random"].metrics
    # the same starts (the random ones from the same key), the lowest converged objective kept
    # (to float64 rounding: three starts are another program than one; lbfgs.minimize)
    assert both["objective"] == pytest.approx(min(objective["spectral"], objective["random"]),
                                              rel=1e-12, abs=0)  # fmt: skip
    assert both["converged"] and both["start"] == "spectral_and_random"
    # here both random starts end in a local minimum (see the test above): the spectral one wins
    assert objective["spectral"] < objective["random"] and both["best_restart"] == 0
    # ... and no random start reached the spectral one's minimum
    assert (both["starts"], both["starts_at_best"]) == (3, 1)
    assert fits["random"].metrics["starts_at_best"] >= 1


@pytest.mark.slow
def test_training_is_deterministic_and_transformer_learns(potts):
    train_seqs, test_seqs, J, U = potts
    train_seqs, test_seqs = train_seqs[:1000], test_seqs[:500]
    cfg = fast(epochs=6, model_dim=8, restarts=2, eval_every=2)
    programs = CompiledRuns()  # one program for the three runs
    runs = [
        train.train_mlm("vanilla1", cfg, train_seqs, test_seqs, J, U, BETA, jax.random.key(k),
                        programs)
        for k in (16, 16, 17)
    ]
    for name in runs[0].params:
        np.testing.assert_array_equal(runs[0].params[name], runs[1].params[name])
    for name in runs[0].history:
        np.testing.assert_array_equal(runs[0].history[name], runs[1].history[name])
    assert not np.array_equal(runs[0].params["embed/w"], runs[2].params["embed/w"])
    np.testing.assert_array_equal(runs[0].history["epoch"], [2, 4, 6])
    assert "layers/0/qkv/w" in runs[0].params
    assert runs[0].metrics["test_loss"] < np.log(C) - 0.1
    np.testing.assert_allclose(runs[0].attention.sum(axis=-1), 1.0, rtol=1e-6)


def test_compiled_runs_compile_once_per_shape_and_report_progress(potts, caplog):
    """Equal shapes reuse one program, whose progress lines go to the cache's reporter; the
    oldest program is dropped past ``size``."""
    train_seqs, test_seqs, J, U = potts
    programs = CompiledRuns(Progress(logging.getLogger("test.progress")), size=1)
    cfg = fast(epochs=2, restarts=1)
    data = (train_seqs[:100], test_seqs[:50], J, U, BETA)
    with caplog.at_level(logging.INFO, logger="test.progress"):
        first = train.train_mlm("factored", cfg, *data, jax.random.key(1), programs)
        (program,) = programs._programs.values()
        again = train.train_mlm("factored", cfg, *data, jax.random.key(2), programs)
        assert list(programs._programs.values()) == [program]
    assert not np.array_equal(first.params["A"], again.params["A"])
    lines = [r.getMessage() for r in caplog.records if r.name == "test.progress"]
    assert len(lines) == 4 and all(line.startswith("epoch ") for line in lines)
    assert lines[1].startswith("epoch 2/2  train ") and lines[3].startswith("epoch 2/2  train ")
    train.train_mlm("factored", replace(cfg, epochs=3), *data, jax.random.key(1), programs)
    assert list(programs._programs.values()) != [program] and len(programs._programs) == 1


# float32 training: a batched program may order a reduction differently, and Adam carries the
# rounding along; the documented tolerance of a problem's losses and maps across chunk sizes
BATCHED_RTOL = 1e-4


def test_problems_side_by_side_match_each_alone(potts):
    """``train_many`` of two problems (two data sets, two keys) in one program gives each the
    numbers it gets alone, within ``BATCHED_RTOL``: the chunk size of a job changes no result;
    and a run's metrics record how many problems shared its program. (The transformers, through
    the workflow: ``test_workflow_all.test_chunked_training_jobs_give_the_same_models``.)"""
    arch = "factored"
    train_seqs, test_seqs, J, U = potts
    cfg = fast(epochs=4, restarts=2, eval_every=2, model_dim=8)
    problems = [train.Problem(train_seqs[i * 300:(i + 1) * 300], test_seqs[:100], J, U, BETA,
                              jax.random.key(i)) for i in range(2)]  # fmt: skip
    together = train.train_many(arch, cfg, problems)
    alone = [train.train_many(arch, cfg, [p])[0] for p in problems]
    assert not np.allclose(alone[0].history["test_loss"], alone[1].history["test_loss"])
    for a, b in zip(together, alone, strict=True):
        assert (a.metrics["realisations_per_program"], b.metrics["realisations_per_program"]) \
            == (2, 1)
        for name in ("train_loss", "test_loss", "pearson_r"):
            np.testing.assert_allclose(a.history[name], b.history[name], rtol=BATCHED_RTOL)
        for name in ("train_loss", "test_loss", "recon_error", "grad_norm"):
            np.testing.assert_allclose(a.metrics[name], b.metrics[name], rtol=BATCHED_RTOL)
        # what the model computes, not its parameters: Adam's normalised steps carry a rounding
        # difference far along a direction the loss hardly sees
        np.testing.assert_allclose(a.attention, b.attention, rtol=BATCHED_RTOL, atol=1e-6)
        assert a.metrics["best_restart"] == b.metrics["best_restart"]


def test_reconstruction_sign_gauge():
    """(A, V) -> (-A, -V) is the same factored model: with ``gauge`` its r does not flip."""
    J = jax.random.normal(jax.random.key(0), (6, 6))
    J = J + J.T
    att = 0.3 * J + 0.1 * jax.random.normal(jax.random.key(1), (6, 6))
    e, r, c = metrics.reconstruction(att, J, gauge=True)
    e_neg, r_neg, c_neg = metrics.reconstruction(-att, J, gauge=True)
    assert float(r) > 0.9 and np.isclose(float(r_neg), float(r)) and np.isclose(e_neg, e)
    assert np.isclose(float(c_neg), -float(c))
    assert np.isclose(float(metrics.reconstruction(-att, J)[1]), -float(r))


def test_convergence_criterion():
    flat = np.concatenate([np.linspace(2.0, 1.0, 80), np.full(20, 1.0)])
    out = metrics.convergence(flat, 0.1, 1e-3)
    assert out["converged"] and out["convergence_epochs"] == 10 and out["rel_improvement"] == 0.0
    falling = np.linspace(2.0, 1.0, 100)  # still improving by ~10 % per window
    out = metrics.convergence(falling, 0.1, 1e-3)
    assert not out["converged"]
    assert out["rel_improvement"] == pytest.approx((10 / 99) / (1 + 4.5 / 99))
    assert not metrics.convergence(np.array([1.0]), 0.1, 1e-3)["converged"]  # too short to tell
    assert not metrics.convergence(np.full(10, np.nan), 0.1, 1e-3)["converged"]


def test_stop_criterion():
    """A run stops once its lowest held-out loss of the last window improves on the lowest
    before by less than the tolerance; a run still falling, or too short to tell, goes on;
    evaluations a run skipped (NaN) do not count."""
    epoch = np.arange(10, 101, 10)
    flat = np.concatenate([np.linspace(2.0, 1.0, 5), np.full(5, 1.0)])[:, None]
    falling = np.linspace(2.0, 1.0, 10)[:, None]
    both = np.concatenate([flat, falling], axis=1)
    np.testing.assert_array_equal(metrics.stopped(epoch, both, 40, 1e-3), [True, False])
    assert not metrics.stopped(epoch, both, 100, 1e-3).any()  # no evaluation before the window
    assert metrics.stopped(epoch, falling, 40, 0.5).all()  # improving by less than half
    gappy = np.where(np.arange(10)[:, None] % 2, np.nan, flat)
    assert metrics.stopped(epoch, gappy, 40, 1e-3).all()


def test_a_plateau_lowers_the_learning_rate_before_it_stops_the_run():
    """On a flat held-out loss, each plateau a full window after the last change multiplies the
    restart's rate by ``stop_decay``, ``stop_decays`` times; the next plateau stops it there."""
    plan = Plan(epochs=1000, steps=1, all_sites=False, batch=1, restarts=1, l2=0.0,
                eval_every=10, log_every=10, stop_window=40, stop_tol=1e-3, stop_decays=2,
                stop_decay=0.1)
    stop = loop.Stop(plan, (1, 1))
    flat = {"test_loss": np.full((1000, 1, 1), np.nan), "train_loss": np.ones((1000, 1, 1))}
    flat["test_loss"][9::10] = 1.0
    flat["test_loss_heldout"] = flat["test_loss"]
    seen = []
    for done in range(10, 1001, 10):
        if stop.update(done, {k: v[:done] for k, v in flat.items()}):
            break
        seen.append((done, float(stop.rates[0, 0])))
    assert done == 130 and stop.met.all() and stop.epochs[0, 0] == 130
    changes = [(d, r) for (d, r), (_, before) in zip(seen[1:], seen, strict=False) if r != before]
    assert changes == [(50, pytest.approx(0.1)), (90, pytest.approx(0.01))]


@pytest.mark.slow
def test_stop_window_keeps_the_lowest_held_out_loss_and_ends_early(potts):
    """With a stop window, a transformer whose held-out loss has stopped improving ends before
    its cap, converged, keeping the parameters of its lowest held-out loss (the kept metrics
    are that evaluation's, and re-evaluating the kept parameters gives them); one that cannot
    meet the criterion (tolerance 0 on a still-falling loss) runs to the cap, not converged."""
    train_seqs, test_seqs, J, U = potts
    train_seqs, test_seqs = train_seqs[:600], test_seqs[:300]
    cfg = fast(epochs=400, model_dim=8, restarts=2, eval_every=4, stop_window=40, stop_tol=0.01)
    run = train.train_mlm("vanilla1", cfg, train_seqs, test_seqs, J, U, BETA, jax.random.key(3))
    m, h = run.metrics, run.history
    assert m["converged"] and m["stop_epoch"] < 400 and m["epoch_cap"] == 400
    assert h["epoch"][-1] == m["stop_epoch"] and m["stop_epoch"] % 12 == 0  # chunks of 12
    kept = int(np.argmin(h["test_loss_heldout"]))
    assert m["best_epoch"] == h["epoch"][kept]
    assert m["test_loss_heldout"] == h["test_loss_heldout"][kept] < h["test_loss_heldout"][-1]
    # the kept map is that evaluation's: its fit to J, in float64, is the history's float32 one
    assert m["pearson_r"] == pytest.approx(h["pearson_r"][kept], rel=1e-4)
    assert m["pearson_r"] != pytest.approx(h["pearson_r"][-1], rel=1e-4)
    assert m["supervised_per_epoch"] == 600  # one masked site per sequence
    falling = train.train_mlm("vanilla1", replace(cfg, epochs=24, stop_tol=0.5, stop_window=200),
                              train_seqs, test_seqs, J, U, BETA, jax.random.key(3))
    assert not falling.metrics["converged"] and falling.metrics["stop_epoch"] == 24


def test_in_training_set():
    train_seqs = np.array([[0, 1, 2], [2, 2, 2]])
    test_seqs = np.array([[2, 2, 2], [0, 1, 1], [0, 1, 2], [1, 0, 2]], np.uint8)  # dtypes differ
    np.testing.assert_array_equal(sequences.in_training_set(train_seqs, test_seqs),
                                  [True, False, True, False])  # fmt: skip
    assert sequences.n_distinct(np.array([[0, 1], [0, 1], [1, 1]], np.uint8)) == 2


def _samples(path, train_seqs, test_seqs, J, U):
    data = {"train": train_seqs, "test": test_seqs, "J": J, "U": U}
    write_artefact(path, POTTS_SAMPLES, data, {},
                   seeds={"seed": 0, "realisation": 0}, attrs={"beta": BETA})  # fmt: skip


@pytest.mark.slow
def test_convergence_recorded_and_unconverged_flagged(potts, tmp_path):
    """Train stage on a tiny model: a long enough fit meets the stated criterion and records it;
    three epochs are flagged as not converged in the artefact, the tables and their warnings."""
    train_seqs, test_seqs, J, U = potts
    train_seqs = np.concatenate([train_seqs[:1000], test_seqs[:50]])  # 50 test rows in-sample
    test_seqs = test_seqs[:500]
    _samples(tmp_path / "samples.h5", train_seqs, test_seqs, J, U)
    paths = []
    for epochs in (40, 3):
        training = {**schema_defaults("training"), **FAST, "epochs": epochs,
                    "init_scale": 1.0}  # fmt: skip
        out = tmp_path / f"factored_{epochs}.h5"
        job = Job(input={"samples_r0": str(tmp_path / "samples.h5")},
                  output={"model_r0": str(out)},
                  params={"seed": 0, "realisations": [0], "arch": "factored",
                          "training": training})  # fmt: skip
        stages_fits.train(job)
        paths.append(str(out))
    long, short = (read_artefact(p, MLM_TRAIN) for p in paths)
    assert long.attrs["converged"] and not short.attrs["converged"]
    assert long.attrs["rel_improvement"] < long.attrs["convergence_tol"] == 1e-3
    assert short.attrs["rel_improvement"] > 1e-3
    assert "relative improvement" in long.attrs["convergence_criterion"]
    in_train = sequences.in_training_set(train_seqs, test_seqs)
    assert long.attrs["test_overlap"] == pytest.approx(np.mean(in_train)) and in_train.any()
    spec = models.arch_spec("factored", L, C)
    params = {"A": jnp.asarray(long["params/A"]), "V": jnp.asarray(long["params/V"])}
    heldout = float(objective.full_loss(spec, params, jnp.asarray(test_seqs[~in_train])))
    np.testing.assert_allclose(long.attrs["test_loss_heldout"], heldout, rtol=1e-5)
    _, final, restarts = tables.training_tables(paths)
    assert final["converged"].tolist() == [True, False]
    # every restart's final losses; the best by training loss is the run's
    assert len(restarts) == 2 * training["restarts"] == 2 * len(long["restarts/test_loss"])
    best = int(long.attrs["best_restart"])
    np.testing.assert_allclose(long["restarts/train_loss"].min(), long.attrs["train_loss"])
    np.testing.assert_allclose(long["restarts/test_loss"][best], long.attrs["test_loss"])
    plm_df = pd.DataFrame(columns=["kind", "realisation", "converged", "grad_norm", "grad_tol",
                                   "stop_reason"]).astype({"converged": bool})  # fmt: skip
    curve = pd.DataFrame({"realisation": [0], "M": [10], "converged": [True]})
    lines = tables.warnings(final, plm_df, curve)
    flagged = [line for line in lines if line.startswith("train ")]
    assert flagged == [f"train factored r0: NOT CONVERGED (relative improvement "
                       f"{short.attrs['rel_improvement']:.1e}, max |gradient| "
                       f"{short.attrs['grad_norm']:.1e})"]  # fmt: skip


@pytest.mark.slow
def test_polish_reaches_the_gradient_criterion(potts):
    """The L-BFGS polish of factored attention's Adam solution: converged by its gradient
    criterion (recorded as the run's), at a training loss no higher than Adam's; cut short it
    is flagged as not converged."""
    train_seqs, test_seqs, J, U = potts
    key = jax.random.key(19)
    cfg = fast(epochs=10, polish_max_iter=500)
    programs = CompiledRuns()  # the polish runs after the program: one program for the three
    data = (train_seqs, test_seqs, J, U, BETA, key, programs)
    adam = train.train_mlm("factored", replace(cfg, polish_max_iter=0), *data)
    run = train.train_mlm("factored", cfg, *data)
    cut = train.train_mlm("factored", replace(cfg, polish_max_iter=2), *data)
    m = run.metrics
    assert m["converged"] and m["polish_converged"] and m["grad_norm"] <= m["polish_grad_tol"]
    assert "polish" in m["convergence_criterion"] and m["polish_iterations"] > 0
    assert m["adam_train_loss"] == pytest.approx(adam.metrics["train_loss"])
    assert m["train_loss"] <= adam.metrics["train_loss"] + 1e-7
    assert adam.metrics["grad_norm"] > m["polish_grad_tol"]  # 10 epochs of Adam: not stationary
    assert not cut.metrics["converged"] and cut.metrics["grad_norm"] > m["polish_grad_tol"]
    spec = models.arch_spec("factored", L, C)
    params = {k: jnp.asarray(v) for k, v in run.params.items()}
    np.testing.assert_allclose(m["test_loss"], float(objective.full_loss(spec, params, test_seqs)),
                               rtol=1e-10)  # fmt: skip


@pytest.mark.slow
def test_plm_convergence_is_the_gradient_criterion(potts):
    train_seqs, test_seqs, J, U = potts
    key = jax.random.key(18)
    cut = plm.fit_plm("full", plm_options("full", max_iter=3), train_seqs, test_seqs, J, U, BETA,
                      key)
    assert not cut.metrics["converged"] and cut.metrics["grad_norm"] > cut.metrics["grad_tol"]
    assert cut.metrics["stop_reason"] == lbfgs.STOPS[lbfgs.MAX_ITER]
    # another penalty and iteration budget on data of the same shape: the same program
    programs = lbfgs._advance._cache_size()
    fit = plm.fit_plm("full", plm_options("full", l2=1e-3), train_seqs, test_seqs, J, U, BETA,
                      key)
    assert lbfgs._advance._cache_size() == programs
    assert fit.metrics["converged"] and fit.metrics["grad_norm"] <= fit.metrics["grad_tol"]
    assert fit.metrics["objective"] < cut.metrics["objective"]


def test_factored_attention_at_beta_J_and_U_is_the_potts_conditional():
    """Eqs. 4-5: with A = beta J, V = U the log conditionals agree to rounding; off the map
    they do not (the check the claims table's eq5.exact_map row reads)."""
    from workflow_lib.mlm.plm import exact_map_error

    rng = np.random.default_rng(0)
    L, C, beta = 6, 4, 1.3
    J = rng.normal(size=(L, L))
    J = (J + J.T) / 2
    np.fill_diagonal(J, 0)
    U = rng.normal(size=(C, C))
    U = (U + U.T) / 2  # the model's U is symmetric (potts.model.draw_couplings)
    seqs = jnp.asarray(rng.integers(0, C, (20, L)))
    spec = models.ArchSpec("factored", L, C)
    exact = {"A": beta * jnp.asarray(J), "V": jnp.asarray(U)}
    assert exact_map_error(spec, exact, seqs, jnp.asarray(J), jnp.asarray(U), beta) < 1e-12
    off = {"A": 1.2 * jnp.asarray(J), "V": jnp.asarray(U)}
    assert exact_map_error(spec, off, seqs, jnp.asarray(J), jnp.asarray(U), beta) > 0.1
