"""One-shot Omniglot: images and episodes, the gradient-descent model against the theory's path
form, its training recipe (leaving the plateau), head scores and pruning, the stages end to end."""

from __future__ import annotations

import io
import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from workflow_lib.attention import heads, icl, model
from workflow_lib.claims.statistics import VERDICTS
from workflow_lib.core.artefacts import ArtefactError, read_artefact
from workflow_lib.core.config import load_config
from workflow_lib.core.registry import Job
from workflow_lib.studies.omniglot import data, stages, training
from workflow_lib.studies.omniglot.artefacts import (
    OMNIGLOT_MODEL,
    OMNIGLOT_PRUNING,
    OMNIGLOT_THEORY,
)
from workflow_lib.studies.omniglot.claims import omniglot_claims
from workflow_lib.studies.omniglot.registry import STUDY, stage_params

ARCHIVE = ROOT / "data" / "omniglot" / "images_background_small1.zip"


@pytest.fixture(scope="module")
def bank() -> data.Bank:
    return data.load_bank(ARCHIVE, 32, 8)[0]


def test_bank_images_and_tokens(bank):
    assert bank.tokens.shape == (2720, 16, 192) and bank.n_characters == 136
    assert np.all(np.diff(bank.character) >= 0)  # characters contiguous
    assert np.all(np.diff(bank.starts) == 20)  # 20 drawings each
    # LayerNorm-ed patches: zero mean, unit variance (less for near-blank patches, by eps)
    std = bank.tokens.std(axis=-1)
    assert np.all(std <= 1.0 + 1e-5) and np.mean(std > 0.99) > 0.2
    np.testing.assert_allclose(bank.tokens.mean(axis=-1), 0.0, atol=1e-4)


@pytest.mark.slow
def test_rotated_characters_are_new_characters(bank):
    rotated, names = data.load_bank(ARCHIVE, 32, 8, rotations=True)
    n = len(bank.character)
    assert rotated.n_characters == 4 * 136 and len(names) == 4 * 136
    assert np.all(np.diff(rotated.character) >= 0) and np.all(np.diff(rotated.starts) == 20)
    np.testing.assert_array_equal(rotated.tokens[:n], bank.tokens)  # rotation 0: the bank
    assert names[136 * 2 + 5] == f"{names[5]} rotated 180"
    # 180 degrees: patch q is the original's patch 15 - q with its pixels in reverse order (the
    # three equal channels make the reversed (h, w, channel) entries the same vector)
    half = rotated.tokens[2 * n:3 * n]
    np.testing.assert_allclose(half, bank.tokens[:, ::-1, ::-1], atol=1e-5)
    assert not np.allclose(rotated.tokens[n:2 * n], bank.tokens, atol=1e-2)


def test_patch_tokens_order():
    img = np.arange(16.0).reshape(1, 4, 4)
    tokens = data.patch_tokens(img, 2)
    assert tokens.shape == (1, 4, 12)
    # patch 1 (top right) holds pixels (0,2),(0,3),(1,2),(1,3), each repeated 3x, LayerNorm-ed
    raw = np.repeat(np.array([2.0, 3.0, 6.0, 7.0]), 3)
    np.testing.assert_allclose(tokens[0, 1], (raw - raw.mean()) / np.sqrt(raw.var() + 1e-5),
                               rtol=1e-5)


@pytest.mark.slow
def test_episodes(bank):
    ep = data.draw_episodes(jax.random.key(0), bank, 400)
    char = bank.character[ep.images]
    assert np.all(char[:, 0] != char[:, 1])  # two different characters
    query_label = (ep.y + 1) // 2
    matching = np.where(ep.context_labels[:, 0] == query_label, 0, 1)
    assert np.all(char[np.arange(400), matching] == char[:, 2])  # query of the labelled class
    assert np.all(ep.images[np.arange(400), matching] != ep.images[:, 2])  # another drawing
    assert np.sum(ep.y == 1) == 200 and np.all(ep.y[:200] == 1)
    assert set(np.unique(ep.context_labels[:, 0])) == {0, 1}
    np.testing.assert_array_equal(ep.context_labels.sum(axis=1), 1)


@pytest.mark.slow
def test_sequences_add_position_and_label(bank):
    emb = data.embeddings(jax.random.key(1), 16, 192, 1.0, 1.0)
    assert abs(emb.position.mean()) < 1e-12 and abs(emb.position.std() - 1) < 1e-12
    ep = data.draw_episodes(jax.random.key(2), bank, 3)
    x = np.asarray(data.sequences(jnp.asarray(bank.tokens), emb, ep.images,
                                      ep.context_labels))
    assert x.shape == (3, 48, 192)
    label = ep.context_labels[1, 1]
    expect = bank.tokens[ep.images[1, 1]] + emb.label[label] + emb.position[16:32]
    np.testing.assert_allclose(x[1, 16:32], expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x[1, 32:], bank.tokens[ep.images[1, 2]] + emb.label[2]
                               + emb.position[32:], rtol=1e-5, atol=1e-5)


NET = icl.Net(width=6, head_dim=3, layers=2, heads=3, n0=8)


def _inputs(n: int = 5) -> jax.Array:
    return jax.random.normal(jax.random.key(7), (n, 4, NET.n0), jnp.float64)


@pytest.mark.slow
def test_gradient_descent_model_is_the_theory_network():
    """f of the trained-model parameterisation = the path form Σ_π (V0ᵀ ū^π)·Φ_:π with the
    exported heads W = KᵀQ/sqrt(G) and the weights rescaled to the theory's convention."""
    params = jax.tree.map(lambda v: v.astype(jnp.float64), icl.init(jax.random.key(3), NET))
    x0 = _inputs()
    f = icl.forward(params, NET, x0, icl.all_heads(NET))
    x = jnp.swapaxes(x0, 1, 2)
    omegas = [model.attention_maps(x, W) for W in icl.attention_logits_weights(params, NET)]
    phi = model.path_features(x, omegas, jnp.full(4, 0.25))
    a, values, V0 = icl.theory_weights(params, NET)
    ubar = model.suffix_vectors(a, values)[0]
    np.testing.assert_allclose(model.readout(phi, ubar @ V0), f, rtol=1e-10, atol=1e-12)


def test_pruning_drops_a_head_and_renormalises():
    params = jax.tree.map(lambda v: v.astype(jnp.float64), icl.init(jax.random.key(4), NET))
    x0 = _inputs()
    keep = heads.keep_mask(NET.layers, NET.heads, [(1, 2)])
    pruned = icl.forward(params, NET, x0, keep)
    by_hand = dict(params, V2=params["V2"].at[2].set(0.0) * np.sqrt(3 / 2))
    np.testing.assert_allclose(pruned, icl.forward(by_hand, NET, x0, icl.all_heads(NET)),
                               rtol=1e-10)
    assert not np.allclose(pruned, icl.forward(params, NET, x0, icl.all_heads(NET)))


@pytest.mark.slow
@pytest.mark.parametrize("net", [NET, icl.Net(width=5, head_dim=2, layers=3, heads=2, n0=8)])
def test_path_outputs_give_every_pruning(net):
    """One pass of path outputs (h1-major) weighted by ``path_weights`` = the forward pass with
    any head mask; ``outputs`` (batched) = ``path_outputs``."""
    params = jax.tree.map(lambda v: v.astype(jnp.float64), icl.init(jax.random.key(8), net))
    x0 = _inputs(7)
    paths = icl.path_outputs(params, net, x0)
    assert paths.shape == (7, net.heads ** net.layers)
    np.testing.assert_allclose(icl.outputs(params, net, x0), paths, rtol=1e-12, atol=1e-14)
    for removed in ([], [(0, 1)], [(net.layers - 1, 0), (0, 0)]):
        keep = heads.keep_mask(net.layers, net.heads, removed)
        np.testing.assert_allclose(paths @ icl.path_weights(keep),
                                   icl.forward(params, net, x0, keep), rtol=1e-10, atol=1e-12)
        f = np.asarray(icl.forward(params, net, x0, keep))
        assert icl.accuracy(paths, jnp.sign(jnp.asarray(f)), keep) == 1.0


def test_head_scores_by_hand():
    U = np.zeros((4, 4))  # 2 layers x 2 heads; paths 11, 12, 21, 22
    U[0, 0] = 4.0  # path 11 with itself
    U[1, 3] = U[3, 1] = -1.0  # paths 12 and 22
    assert heads.path_labels(2, 2) == ["11", "12", "21", "22"]
    s = heads.scores(U, 2, 2)
    # (1)1: paths 11, 12 -> 4 + 1 + 1 = 6; (1)2: paths 21, 22 -> 2; (2)1: 11, 21 -> 4;
    # (2)2: 12, 22 -> 2 (the entries 12-22 and 22-12 pass through it at both ends)
    np.testing.assert_allclose(s, np.array([[6.0, 2.0], [4.0, 2.0]]) / 6.0)
    orders = heads.pruning_orders(s)
    assert orders["ascending"][0] in [(0, 1), (1, 1)] and orders["descending"][0] == (0, 0)
    assert heads.removal_sequence([(0, 1), (0, 0), (1, 1)], 2, 2) == [(0, 1), (1, 1)]


@pytest.mark.slow
def test_path_labels_follow_the_path_order():
    """Path p of ``path_heads`` is the p-th path of ``model.path_attention`` (h1-major)."""
    T = 3
    omegas = [jax.random.dirichlet(jax.random.key(i), jnp.ones(T), (2, T)).transpose(0, 2, 1)
              for i in range(2)]
    r = jnp.array([0.0, 0.0, 1.0])
    c = model.path_attention(omegas, r)
    for p, (h1, h2) in enumerate(heads.path_heads(2, 2)):
        np.testing.assert_allclose(c[p], omegas[0][h1] @ omegas[1][h2] @ r, rtol=1e-12)


@pytest.mark.slow
def test_identical_query_episodes(bank):
    """identical = 1: the query is the matching context image itself; identical = 0: the paper's
    episodes, every other draw unchanged by the option."""
    key = jax.random.key(5)
    same = data.Episodes(*(np.asarray(a) for a in data.episode_draw(
        key, jnp.asarray(bank.starts), 200, identical=1.0)))
    other = data.draw_episodes(key, bank, 200, balanced=False)
    matching = np.where(same.context_labels[:, 0] == (same.y + 1) // 2, 0, 1)
    assert np.all(same.images[np.arange(200), matching] == same.images[:, 2])
    np.testing.assert_array_equal(same.images[:, :2], other.images[:, :2])
    np.testing.assert_array_equal(same.y, other.y)
    assert np.all(other.images[np.arange(200), matching] != other.images[:, 2])


def test_recipe_schedules():
    r = training.Recipe(steps=101, batch=4, learning_rate=1e-3, weight_decay=0.0, log_every=10,
                        identical_start=0.8, identical_end=0.2, warmup_steps=10, cosine=True)
    np.testing.assert_allclose([r.identical(0), r.identical(50), r.identical(100)],
                               [0.8, 0.5, 0.2])
    lr = r.schedule()
    np.testing.assert_allclose([lr(0), lr(5), lr(10), lr(101)], [0.0, 5e-4, 1e-3, 1e-5],
                               rtol=1e-6)
    assert training.Recipe(10, 4, 1e-3, 0.0, 5).schedule()(7) == pytest.approx(1e-3)


@pytest.mark.slow
def test_init_schemes_variance():
    net = icl.Net(width=200, head_dim=50, layers=1, heads=2, n0=300)
    for scheme, var in (("pytorch", 1 / 3), ("lecun", 1.0)):
        p = icl.init(jax.random.key(0), net, scheme)
        assert float(jnp.var(p["Q1"]) * 300) == pytest.approx(var, rel=0.05)
    with pytest.raises(ValueError, match="unknown initialisation"):
        icl.init(jax.random.key(0), net, "xavier")


PLATEAU = 1.0  # square loss on y = +-1 of the model predicting 0
LEFT_PLATEAU = 0.6


@pytest.mark.slow
def test_short_training_leaves_the_plateau(bank):
    """The curriculum's easy episodes (the query is the context image itself) with LeCun-normal
    weights take the training loss from the plateau (1) below 0.6 within 200 steps on 20
    characters (measured: 1.79, 0.87, 0.42, 0.28 per block of 50)."""
    small = bank.subset(np.arange(20))
    emb = data.embeddings(jax.random.key(1), 16, 192, 1.0, 1.0)
    net = icl.Net(width=32, head_dim=16, layers=2, heads=4, n0=192)
    recipe = training.Recipe(steps=200, batch=32, learning_rate=3e-3, weight_decay=0.0,
                             log_every=50, init="lecun", identical_start=1.0, identical_end=1.0)
    out = training.train(jax.random.key(2), net, recipe, small.tokens, small.starts, emb)
    assert out.params["V1"].dtype == jnp.float32
    assert out.steps.tolist() == [50, 100, 150, 200] and np.all(np.isnan(out.validation))
    assert out.loss[-1] < LEFT_PLATEAU < PLATEAU < out.loss[0]


def test_prune_orders_and_curves():
    """Pruning with a toy accuracy (the kept heads' weights summed): single-head costs, the score
    orders, random orders that keep a head per layer, deterministic in the key."""
    weight = np.array([[0.1, 0.4, 0.2], [0.3, 0.0, 0.5]])

    def acc(keep):
        return float(sum(np.sum(np.asarray(m) * w) for m, w in zip(keep, weight, strict=True)))

    pr = heads.prune(acc, weight, jax.random.key(0), 4)
    assert pr.full == pytest.approx(weight.sum())
    np.testing.assert_allclose(pr.single, weight.sum() - weight)
    assert pr.removed["ascending"].tolist() == [[1, 1], [0, 0], [0, 2], [1, 0]]
    np.testing.assert_allclose(pr.cumulative["ascending"], weight.sum() - np.cumsum(
        [0.0, 0.0, 0.1, 0.2, 0.3]))
    assert pr.random.shape == (4, 5) and pr.random_removed.shape == (4, 4, 2)
    for removed in pr.random_removed:  # a head left in each layer
        assert sorted(np.bincount(removed[:, 0], minlength=2).tolist()) == [2, 2]
    again = heads.prune(acc, weight, jax.random.key(0), 4)
    np.testing.assert_array_equal(pr.random, again.random)


def test_stages_end_to_end(tiny_run):
    """data -> train -> features -> theory -> samples -> pruning -> tables -> figures, read from
    the session's tiny workflow run (Omniglot branch on); a model trained with other embeddings
    is refused."""
    cfg = load_config(yaml.safe_load((tiny_run / "tiny.yaml").read_text()))
    out = tiny_run / "results" / "omniglot"
    m = read_artefact(out / "model.h5", OMNIGLOT_MODEL,
                      required=("history/validation", "attention/2"))
    train = cfg["omniglot"]["training"]
    assert m["history/steps"].tolist() == list(range(train["log_every"], train["steps"] + 1,
                                                     train["log_every"]))
    assert np.all(np.isfinite(m["history/loss"]))
    assert json.loads(m.attrs["recipe"])["init"] == train["init"]
    net = cfg["omniglot"]["network"]
    th = read_artefact(out / "theory.h5", OMNIGLOT_THEORY, required=("U/1", "selected"))
    n_paths = net["heads"] ** net["layers"]
    assert th["U/1"].shape[-2:] == (n_paths, n_paths)
    assert th["head_scores"].shape == (net["layers"], net["heads"])
    pr = read_artefact(out / "pruning.h5", OMNIGLOT_PRUNING,
                       required=("cumulative/random",))
    assert pr["cumulative/random"].shape == (cfg["omniglot"]["random_orders"],
                                             net["layers"] * (net["heads"] - 1) + 1)
    claims = pd.read_csv(out / "tables" / "claims.csv")
    assert set(claims["verdict"]) <= set(VERDICTS)
    assert claims["id"].str.startswith(("fig3.", "fig3b.", "fig3c.", "fig3d.", "fig3e.",
                                        "fig3f.")).all() and claims["id"].is_unique
    tables = {name: pd.read_csv(out / "tables" / f"{name}.csv")
              for name in STUDY.tables if name != "claims"}
    again = omniglot_claims(tables)  # the claims table follows from the CSV tables alone
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(again.to_csv(index=False))), claims)
    ep = tables["episodes"]
    assert len(ep) == cfg["omniglot"]["n_test"] * ep.groupby(["method", "N"]).ngroups
    for panel in (p.name for p in STUDY.panels):
        for ext in ("png", "pdf"):
            assert (tiny_run / "results" / "figures" / f"{panel}.{ext}").stat().st_size > 1000
    folder = ROOT / cfg["omniglot"]["data_dir"]
    archives = {"train_archive": str(folder / cfg["omniglot"]["train_archive"]),
                "test_archive": str(folder / cfg["omniglot"]["test_archive"])}
    other = {**cfg, "seed": cfg["seed"] + 1}
    other_data = str(tiny_run.parent / "other_data.h5")
    stages.omniglot_data(Job(input=archives, output={"data": other_data},
                             params=stage_params(other, "omniglot_data")))
    with pytest.raises(ArtefactError, match="trained with other label embeddings"):
        stages.omniglot_features(Job(
            input={"data": other_data, "model": str(out / "model.h5")},
            output={"features": str(tiny_run.parent / "refused.h5")},
            params=stage_params(cfg, "omniglot_features")))
