"""One-shot Omniglot: images and episodes, the gradient-descent model against the theory's path
form, head scores and pruning."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.conftest import ROOT
from workflow_lib.paths import heads, icl, model, omniglot

ARCHIVE = ROOT / "data" / "omniglot" / "images_background_small1.zip"


@pytest.fixture(scope="module")
def bank() -> omniglot.Bank:
    return omniglot.load_bank(ARCHIVE, 32, 8)[0]


def test_bank_images_and_tokens(bank):
    assert bank.tokens.shape == (2720, 16, 192) and bank.n_characters == 136
    assert np.all(np.diff(bank.character) >= 0)  # characters contiguous
    assert np.all(np.diff(bank.starts) == 20)  # 20 drawings each
    # LayerNorm-ed patches: zero mean, unit variance (less for near-blank patches, by eps)
    std = bank.tokens.std(axis=-1)
    assert np.all(std <= 1.0 + 1e-5) and np.mean(std > 0.99) > 0.2
    np.testing.assert_allclose(bank.tokens.mean(axis=-1), 0.0, atol=1e-4)


def test_patch_tokens_order():
    img = np.arange(16.0).reshape(1, 4, 4)
    tokens = omniglot.patch_tokens(img, 2)
    assert tokens.shape == (1, 4, 12)
    # patch 1 (top right) holds pixels (0,2),(0,3),(1,2),(1,3), each repeated 3x, LayerNorm-ed
    raw = np.repeat(np.array([2.0, 3.0, 6.0, 7.0]), 3)
    np.testing.assert_allclose(tokens[0, 1], (raw - raw.mean()) / np.sqrt(raw.var() + 1e-5),
                               rtol=1e-5)


def test_episodes(bank):
    ep = omniglot.draw_episodes(jax.random.key(0), bank, 400)
    char = bank.character[ep.images]
    assert np.all(char[:, 0] != char[:, 1])  # two different characters
    query_label = (ep.y + 1) // 2
    matching = np.where(ep.context_labels[:, 0] == query_label, 0, 1)
    assert np.all(char[np.arange(400), matching] == char[:, 2])  # query of the labelled class
    assert np.all(ep.images[np.arange(400), matching] != ep.images[:, 2])  # another drawing
    assert np.sum(ep.y == 1) == 200 and np.all(ep.y[:200] == 1)
    assert set(np.unique(ep.context_labels[:, 0])) == {0, 1}
    np.testing.assert_array_equal(ep.context_labels.sum(axis=1), 1)


def test_sequences_add_position_and_label(bank):
    emb = omniglot.embeddings(jax.random.key(1), 16, 192, 1.0, 1.0)
    assert abs(emb.position.mean()) < 1e-12 and abs(emb.position.std() - 1) < 1e-12
    ep = omniglot.draw_episodes(jax.random.key(2), bank, 3)
    x = np.asarray(omniglot.sequences(jnp.asarray(bank.tokens), emb, ep.images,
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


def test_path_labels_follow_the_path_order():
    """Path p of ``path_heads`` is the p-th path of ``model.path_attention`` (h1-major)."""
    T = 3
    omegas = [jax.random.dirichlet(jax.random.key(i), jnp.ones(T), (2, T)).transpose(0, 2, 1)
              for i in range(2)]
    r = jnp.array([0.0, 0.0, 1.0])
    c = model.path_attention(omegas, r)
    for p, (h1, h2) in enumerate(heads.path_heads(2, 2)):
        np.testing.assert_allclose(c[p], omegas[0][h1] @ omegas[1][h2] @ r, rtol=1e-12)
