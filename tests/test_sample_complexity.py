"""Fig. 3 right: the penalty's form, the training accuracy, near-duplicate sequences and the
separability threshold of the sample-complexity sweep, and the identity-reading presets."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import yaml

import workflow_lib  # noqa: F401  (enables float64)
from tests.conftest import ROOT
from tests.test_mlm import plm_options
from workflow_lib.core.artefacts import read_artefact, write_artefact
from workflow_lib.core.config import read_config_files, schema_defaults
from workflow_lib.core.registry import Job
from workflow_lib.mlm import models, plm
from workflow_lib.potts.artefact import POTTS_SAMPLES
from workflow_lib.potts.model import random_colour_couplings, random_couplings
from workflow_lib.potts.sequences import forced_errors, in_training_set
from workflow_lib.studies.potts_paper import stages_fits, tables
from workflow_lib.studies.potts_paper.artefacts import SAMPLE_COMPLEXITY

jax.config.update("jax_enable_x64", True)

L, C, BETA = 5, 3, 1.0


def _couplings():
    return (np.asarray(random_couplings(jax.random.key(1), L)),
            np.asarray(random_colour_couplings(jax.random.key(2), C)))  # fmt: skip


def _eq6_objective(params, seqs, lam):
    """Eq. (6)'s form, written out: -log P(s_i | rest) summed over sequences and sites, with
    J_ij(a, b) = A_ij V_ab (j != i), plus lam (||A||^2 + ||V||^2)."""
    A = params["A"] * (1.0 - jnp.eye(L))
    onehot = jax.nn.one_hot(seqs, C)
    logits = jnp.einsum("ij,ab,mjb->mia", A, params["V"], onehot)
    logp = jnp.sum(jax.nn.log_softmax(logits, axis=-1) * onehot, axis=-1)
    return -jnp.sum(logp) + lam * (jnp.sum(params["A"] ** 2) + jnp.sum(params["V"] ** 2))


def test_effective_l2():
    assert plm.effective_l2(1e-4, "mean", 40, 20) == 1e-4  # today's objective, unchanged
    assert plm.effective_l2(1e-3, "sum", 40, 20) == pytest.approx(1e-3 / 800)
    with pytest.raises(ValueError, match="penalty"):
        plm.effective_l2(1e-3, "total", 40, 20)


@pytest.mark.slow
def test_sum_penalty_fit_is_stationary_for_eq6():
    """A fit with the sum form's l2 is a stationary point of eq. (6)'s objective (loss summed
    over all M sequences, duplicates included, and sites, plus lam ||theta||^2); the mean form's
    fit with the same lam is not."""
    J, U = _couplings()
    rng = np.random.default_rng(3)
    distinct = rng.integers(0, C, (8, L))
    seqs = np.concatenate([distinct, distinct[:4]])  # repeats: M counts them, not the distinct
    M, lam, tol = len(seqs), 0.05, 1e-8
    grad = jax.grad(_eq6_objective)
    norms = {}
    for form in ("sum", "mean"):
        options = plm_options("factored", start="random", restarts=1, grad_tol=tol,
                              max_iter=5000, l2=plm.effective_l2(lam, form, M, L))
        fit = plm.fit_plm("factored", options, seqs, seqs, J, U, BETA, jax.random.key(4))
        assert fit.metrics["converged"]
        g = grad({k: jnp.asarray(fit.params[k]) for k in ("A", "V")}, jnp.asarray(seqs), lam)
        norms[form] = max(float(jnp.max(jnp.abs(v))) for v in g.values())
    assert norms["sum"] <= 2 * M * L * tol  # the averaged objective's tolerance, times M L
    assert norms["mean"] > 1e-2


def _forced_by_enumeration(seqs: np.ndarray) -> int:
    """The errors every classifier makes, by enumerating the classifiers of one site: for each
    context (the rest of the sequence) the best single token, over every token."""
    forced = 0
    for i in range(seqs.shape[1]):
        groups: dict[bytes, list[int]] = {}
        for row in seqs:
            groups.setdefault(np.delete(row, i).tobytes(), []).append(int(row[i]))
        forced += sum(len(t) - max(t.count(a) for a in range(C)) for t in groups.values())
    return forced


def test_forced_errors_by_hand_and_by_enumeration():
    seqs = np.array([[0, 1, 2, 0],
                     [1, 1, 2, 1],    # two spins from row 0: no conflict
                     [0, 1, 2, 0],    # a copy of row 0: the same context and token, no conflict
                     [0, 2, 2, 0]])   # one spin from rows 0 and 2: at site 1, tokens 1, 1, 2
    assert forced_errors(seqs) == 1
    assert forced_errors(seqs[:3]) == 0
    assert forced_errors(np.zeros((0, 4), int)) == 0
    rng = np.random.default_rng(0)
    for n in (5, 30, 80):
        seqs = rng.integers(0, 2, (n, 4))  # a small space: many conflicts
        assert forced_errors(seqs) == _forced_by_enumeration(seqs)


def test_accuracy_by_hand_and_ties_count_as_wrong():
    spec = models.ArchSpec("factored", L, C)
    rng = np.random.default_rng(5)
    params = {"A": jnp.asarray(rng.normal(size=(L, L))), "V": jnp.asarray(rng.normal(size=(C, C)))}
    seqs = rng.integers(0, C, (30, L))
    A = np.asarray(params["A"]) * (1 - np.eye(L))
    logits = np.einsum("ij,ab,mjb->mia", A, np.asarray(params["V"]), np.eye(C)[seqs])
    right = np.asarray(plm.correct("factored", spec, params, jnp.asarray(seqs)))
    np.testing.assert_array_equal(right, np.argmax(logits, axis=-1) == seqs)
    zero = {k: jnp.zeros_like(v) for k, v in params.items()}  # every colour ties: none correct
    assert not plm.correct("factored", spec, zero, jnp.asarray(seqs)).any()


@pytest.mark.slow
def test_train_accuracy_separable_and_not():
    """Two sequences that differ at every site are separated at small l2; two one spin apart
    cannot be (same rest, different tokens at that site)."""
    J, U = _couplings()
    options = plm_options("factored", start="random", restarts=2, l2=1e-6, max_iter=3000)
    apart = np.array([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]])
    close = np.array([[0, 1, 2, 0, 1], [1, 1, 2, 0, 1]])
    fits = {name: plm.fit_plm("factored", options, seqs, seqs, J, U, BETA, jax.random.key(6))
            for name, seqs in (("apart", apart), ("close", close))}  # fmt: skip
    assert fits["apart"].metrics["train_accuracy"] == 1.0
    assert fits["apart"].metrics["train_errors"] == forced_errors(apart) == 0
    assert fits["close"].metrics["train_accuracy"] <= 1 - 1 / (2 * L)
    assert fits["close"].metrics["train_errors"] == forced_errors(close) == 1  # only the forced


def test_the_flat_stop_leaves_a_fit_whose_starts_converge_as_it_is():
    """The sweep's ``ftol`` stop drops only starts that cannot win against an earlier converged
    one: a fit whose starts converge has, with the stop however loose, the numbers it has
    without it (the kept fit, its start and how many starts reach it)."""
    J, U = _couplings()
    rng = np.random.default_rng(5)
    train_seqs, test_seqs = rng.integers(0, C, (30, L)), rng.integers(0, C, (10, L))
    options = plm_options("factored", start="random", restarts=3, l2=1e-3, max_iter=2000)
    key = jax.random.key(4)
    plain = plm.fit_plm("factored", options, train_seqs, test_seqs, J, U, BETA, key).metrics
    loose = plm.fit_plm("factored", replace(options, ftol=0.5, ftol_window=1), train_seqs,
                        test_seqs, J, U, BETA, key).metrics  # fmt: skip
    assert plain["restarts_converged"] == plain["starts"] == 3
    for k in ("test_loss", "objective", "converged", "best_restart", "starts_at_best",
              "restarts_converged", "iterations", "stop_reason"):
        assert loose[k] == plain[k], k


def _samples(path, train_seqs, test_seqs, J, U):
    write_artefact(path, POTTS_SAMPLES, {"train": train_seqs, "test": test_seqs, "J": J, "U": U},
                   {}, seeds={"seed": 0, "realisation": 0}, attrs={"beta": BETA})  # fmt: skip


@pytest.mark.slow
def test_stage_records_penalty_errors_and_separability(tmp_path):
    """The stage with penalty sum fits each M as the mean form with l2 / (M L), bit for bit; it
    records the training errors, those the data force, and separable (the two equal), and the
    held-out loss on the test sequences absent from the whole training set; all reach the
    tables."""
    J, U = _couplings()
    rng = np.random.default_rng(7)
    train_seqs = rng.integers(0, C, (40, L))
    train_seqs[25] = train_seqs[3]
    train_seqs[25, 2] = (train_seqs[3, 2] + 1) % C  # rows 3 and 25 one spin apart
    test_seqs = np.concatenate([rng.integers(0, C, (20, L)), train_seqs[30:32]])
    _samples(tmp_path / "samples.h5", train_seqs, test_seqs, J, U)
    sc = schema_defaults("sample_complexity") | {
        "M": [2, 10, 40], "l2": 0.01, "start": "random", "restarts": 1, "max_iter": 500}
    paths = {}
    for form in ("sum", "mean"):
        paths[form] = str(tmp_path / f"{form}.h5")
        job = Job(input={"samples": str(tmp_path / "samples.h5")}, output={"curve": paths[form]},
                  params={"seed": 0, "realisation": 0, "l2_full": 1e-3,
                          "sample_complexity": {**sc, "penalty": form}})
        stages_fits.sample_complexity(job)
    art = read_artefact(paths["sum"], SAMPLE_COMPLEXITY)
    assert art.attrs["penalty"] == "sum"
    np.testing.assert_array_equal(art["forced_errors"],
                                  [_forced_by_enumeration(train_seqs[:M]) for M in sc["M"]])
    assert art["forced_errors"][-1] >= 1  # rows 3 and 25 one spin apart
    np.testing.assert_array_equal(art["separable"], art["train_errors"] == art["forced_errors"])
    assert np.all(art["train_errors"] >= art["forced_errors"])
    key = stages_fits.stage_key(0, "sample_complexity", 0)
    heldout = test_seqs[~in_training_set(train_seqs, test_seqs)]  # the same set at every M
    assert len(heldout) <= 20  # rows 30, 31 of the training set are held out at no M
    for k, M in enumerate(sc["M"]):
        l2 = sc["l2"] / (M * L)
        assert art["l2_effective"][k] == pytest.approx(l2, rel=1e-15)
        options = plm_options("factored", **{name: sc[name] for name in (
            "start", "restarts", "max_iter", "grad_tol", "ftol", "ftol_window")},
            l2=art["l2_effective"][k], l2_full=1e-3)  # fmt: skip
        fit = plm.fit_plm("factored", options, train_seqs[:M], test_seqs, J, U, BETA, key,
                          heldout=heldout)
        assert fit.metrics["test_loss"] == art["test_loss"][k]
        assert fit.metrics["test_loss_heldout"] == art["test_loss_heldout"][k]
        assert fit.metrics["train_errors"] == art["train_errors"][k]
    mean = read_artefact(paths["mean"], SAMPLE_COMPLEXITY)
    np.testing.assert_array_equal(mean["l2_effective"], sc["l2"])  # the default: unchanged
    curve = tables.sample_complexity_table([paths["sum"]])
    for column in ("train_errors", "forced_errors", "separable", "test_loss_heldout",
                   "optimal_loss_heldout", "l2_effective"):
        assert curve[column].notna().all(), column
    assert len(tables.capacity_edge(curve)) == 1


def test_capacity_edge_from_a_hand_made_table():
    """The edge is the last M of the run of separable fits (training errors equal to the forced
    ones) that starts at the smallest M; every realisation has a row; training data alone
    decide it."""
    M = [2, 5, 10, 20, 40]
    rows = {  # realisation: separable per M
        0: [1, 1, 1, 0, 0],  # an edge at M = 10
        1: [1, 1, 1, 1, 1],  # separable throughout: the edge is the last M, no threshold
        2: [0, 1, 1, 1, 1],  # not separable from the start: no edge
        3: [1, 1, 0, 1, 0],  # the first miss decides: edge at 5
    }
    curve = pd.concat([pd.DataFrame({
        "realisation": r, "M": M, "alpha": np.array(M) / 10, "L": 10.0,
        "separable": np.array(ok, bool)}) for r, ok in rows.items()], ignore_index=True)
    t = tables.capacity_edge(curve).set_index("realisation")
    expected = pd.DataFrame({
        "edge_M": [10, 40, np.nan, 5], "edge_alpha": [1.0, 4.0, np.nan, 0.5],
        "threshold_M": [20, np.nan, 2, 10], "before_M": [5, 20, np.nan, 2],
        "after_M": [40, np.nan, 5, 20], "M_min": 2.0, "M_max": 40.0, "L": 10.0},
        index=pd.Index([0, 1, 2, 3], name="realisation"))
    pd.testing.assert_frame_equal(t[expected.columns], expected, check_dtype=False)


def test_identity_presets():
    """Both presets of the identity reading validate merged over config.yaml (as Snakemake
    merges --configfile), and the paper one differs from config/paper.yaml only where it says
    (the literal reading's fallback rounds: its glassy chains missed their target)."""
    base = ROOT / "config.yaml"
    quick = read_config_files([base, ROOT / "config/quick_identity.yaml"])
    paper = read_config_files([base, ROOT / "config/paper_identity.yaml"])
    literal = read_config_files([base, ROOT / "config/paper.yaml"])
    for cfg in (quick, paper):
        assert cfg["beta_tuning"]["target_hamming"] == 0.7
        assert cfg["sample_complexity"]["penalty"] == "sum"
        assert max(cfg["sample_complexity"]["M"]) <= cfg["sampling"]["n_train"]
    assert quick["results"] == "results/quick_identity" and not quick["omniglot"]["enabled"]
    assert quick["potts"] == read_config_files([base])["potts"]

    def leaves(d, prefix=""):
        for k, v in d.items():
            yield from (leaves(v, f"{prefix}{k}.") if isinstance(v, dict)
                        else [(f"{prefix}{k}", v)])  # fmt: skip

    a, b = dict(leaves(literal)), dict(leaves(paper))
    assert {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} == {
        "results", "beta_tuning.target_hamming", "beta_tuning.candidates", "sample_complexity.M",
        "sample_complexity.penalty", "sample_complexity.l2", "sample_complexity.max_iter",
        "sample_complexity.ftol", "beta_tuning.fallback_rounds"}
    assert yaml.safe_load((ROOT / "config/paper_identity.yaml").read_text())["results"] == (
        "results/paper_identity")
