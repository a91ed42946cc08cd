"""One-shot image classification episodes from Omniglot (Tiberi et al. 2024, Fig. 3).

Images: the PNG drawings of the archives shipped in ``data/omniglot`` (105x105, black strokes on
white), resized to ``size x size`` (bilinear), normalised by the Omniglot mean/std, the grey
channel repeated 3x, and cut into ``patch x patch`` patches (row-major), each flattened
``(h, w, channel)`` and LayerNorm-ed without affine parameters: ``(n_images, n_patches, 3 patch²)``
tokens, ``(16, 192)`` for 32x32 images and 8x8 patches.

Episodes (2-way, 1-shot, in context): two context images of two different characters, in random
order, with the labels 0/1 assigned at random, then a query image (another drawing) of one of the
two. The sequence is the three images' patches in that order (``T = 3 n_patches`` tokens of width
``N0 = 3 patch²``); every token gets a frozen sinusoidal positional encoding and the frozen random
embedding of its image's label (index 2 for the query, whose label is unknown). The target is
``y = 2 label(query) - 1``.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from PIL import Image

MEAN, STD = 0.922, 0.084  # pixel statistics of Omniglot (white = 1)
_DRAWING = re.compile(r"(?:^|/)([^/]+)/(character\d+)/([^/]+\.png)$")


@dataclass(frozen=True)
class Bank:
    """Preprocessed images of one set of characters: ``tokens: (n, n_patches, N0)`` float32 and
    ``character: (n,)`` int32 in 0..n_characters-1, images of a character contiguous."""

    tokens: np.ndarray
    character: np.ndarray

    @property
    def n_characters(self) -> int:
        return int(self.character.max()) + 1

    @property
    def starts(self) -> np.ndarray:
        """``(n_characters + 1,)``: the first image index of each character, then ``n``."""
        return np.searchsorted(self.character, np.arange(self.n_characters + 1)).astype(np.int32)

    def subset(self, characters: np.ndarray) -> Bank:
        """The images of ``characters``, renumbered 0..len-1 in increasing order."""
        characters = np.sort(characters)
        keep = np.isin(self.character, characters)
        renumbered = np.searchsorted(characters, self.character[keep]).astype(np.int32)
        return Bank(self.tokens[keep], renumbered)


def read_drawings(archive: str | Path) -> tuple[list[np.ndarray], list[str]]:
    """All drawings of an Omniglot zip archive as float arrays in [0, 1] (1 = white), with the
    character (``alphabet/characterNN``) of each, sorted by path."""
    images, names = [], []
    with zipfile.ZipFile(archive) as zf:
        for name in sorted(zf.namelist()):
            match = _DRAWING.search(name)
            if match is None:
                continue
            with Image.open(io.BytesIO(zf.read(name))) as im:
                images.append(np.asarray(im.convert("L"), np.float32) / 255.0)
            names.append(f"{match.group(1)}/{match.group(2)}")
    if not images:
        raise ValueError(f"{archive}: no Omniglot drawings (alphabet/characterNN/*.png) found")
    return images, names


def patch_tokens(images: np.ndarray, patch: int, eps: float = 1e-5) -> np.ndarray:
    """``images: (n, S, S)`` normalised grey images -> ``(n, (S/patch)², 3 patch²)`` LayerNorm-ed
    patch tokens (grey channel repeated 3x, patches row-major, entries ``(h, w, channel)``)."""
    n, S, _ = images.shape
    g = S // patch
    p = images.reshape(n, g, patch, g, patch).transpose(0, 1, 3, 2, 4).reshape(n, g * g, -1)
    p = np.repeat(p[..., None], 3, axis=-1).reshape(n, g * g, -1)
    mu, var = p.mean(axis=-1, keepdims=True), p.var(axis=-1, keepdims=True)
    return ((p - mu) / np.sqrt(var + eps)).astype(np.float32)


def load_bank(archive: str | Path, size: int, patch: int,
              rotations: bool = False) -> tuple[Bank, list[str]]:
    """The preprocessed images of an archive and the character names (index = ``character``).

    ``rotations``: also every character rotated by 90, 180 and 270 degrees, each a new character
    (class augmentation, the paper's code's ``--augment_omniglot``): 4x the characters, those of
    rotation k numbered after those of rotation k - 1."""
    if size % patch:
        raise ValueError(f"image size {size} is not a multiple of the patch size {patch}")
    drawings, names = read_drawings(archive)
    resized = np.stack([
        np.asarray(Image.fromarray(d).resize((size, size), Image.BILINEAR), np.float32)
        for d in drawings
    ])
    characters = sorted(set(names))
    number = {c: i for i, c in enumerate(characters)}
    index = np.array([number[c] for c in names], np.int32)
    turns = range(4) if rotations else range(1)
    images = (resized - MEAN) / STD
    tokens = np.concatenate([patch_tokens(np.rot90(images, k, axes=(1, 2)), patch)
                             for k in turns])
    character = np.concatenate([index + k * len(characters) for k in turns])
    named = [c if k == 0 else f"{c} rotated {90 * k}" for k in turns for c in characters]
    return Bank(tokens, character), named


def positional_encoding(tokens: int, width: int) -> np.ndarray:
    """Sinusoidal encoding ``(tokens, width)`` (``sin``/``cos`` of ``t / 10000^(2i/width)``),
    standardised to zero mean and unit standard deviation over all its entries."""
    t = np.arange(tokens)[:, None]
    freq = 10000.0 ** (-np.arange(0, width, 2) / width)
    pe = np.zeros((tokens, width))
    pe[:, 0::2], pe[:, 1::2] = np.sin(t * freq), np.cos(t * freq)
    return (pe - pe.mean()) / pe.std()


@dataclass(frozen=True)
class Embeddings:
    """Frozen token additions: ``position: (T, N0)`` and ``label: (3, N0)`` (0, 1, unknown)."""

    position: np.ndarray
    label: np.ndarray


def embeddings(key: jax.Array, n_patches: int, width: int, positional_scale: float,
               label_scale: float) -> Embeddings:
    """The positional encoding of ``3 n_patches`` tokens times ``positional_scale`` and label
    embeddings with i.i.d. ``N(0, label_scale²)`` entries (both scales 1 in the paper's code)."""
    label = label_scale * np.asarray(jax.random.normal(key, (3, width), jnp.float64))
    return Embeddings(positional_scale * positional_encoding(3 * n_patches, width), label)


@dataclass(frozen=True)
class Episodes:
    """``images: (n, 3)`` bank indices (context, context, query), ``context_labels: (n, 2)`` in
    {0, 1} and ``y: (n,)`` = ±1, the query's label mapped to ±1."""

    images: np.ndarray
    context_labels: np.ndarray
    y: np.ndarray


def draw_episodes(key: jax.Array, bank: Bank, n: int, balanced: bool = True) -> Episodes:
    """``n`` episodes from ``bank``; with ``balanced`` the first ``n - n // 2`` have y = +1 and
    the rest y = -1, otherwise the query's label is a fair coin."""
    return Episodes(*(np.asarray(a) for a in episode_draw(key, bank.starts, n, balanced)))


def episode_draw(key: jax.Array, starts: jax.Array, n: int, balanced: bool = False,
                 identical: jax.Array | float = 0.0):
    """Traceable core of ``draw_episodes``: ``starts: (n_characters + 1,)`` first bank index of
    each character (``Bank.starts``). Returns ``(images, context_labels, y)``.

    ``identical``: probability that an episode's query is the matching context image itself
    instead of another drawing of its character (0 in the paper; a training curriculum here,
    ``studies.omniglot.training``); it leaves every other draw of the episode unchanged."""
    n_char = starts.shape[0] - 1
    k_first, k_second, k_labels, k_query, k_shots = jax.random.split(key, 5)
    first = jax.random.randint(k_first, (n,), 0, n_char)
    second = (first + jax.random.randint(k_second, (n,), 1, n_char)) % n_char
    chars = jnp.stack([first, second], axis=1)  # (n, 2), context order
    start, size = starts[chars], starts[chars + 1] - starts[chars]
    u = jax.random.uniform(k_shots, (n, 3))
    shots = jnp.floor(u[:, :2] * size).astype(jnp.int32)  # drawing within the character
    labels = jax.random.bernoulli(k_labels, 0.5, (n,)).astype(jnp.int32)
    context_labels = jnp.stack([labels, 1 - labels], axis=1)
    if balanced:
        query_label = (jnp.arange(n) < n - n // 2).astype(jnp.int32)
    else:
        query_label = jax.random.bernoulli(k_query, 0.5, (n,)).astype(jnp.int32)
    which = (context_labels[:, 0] != query_label).astype(jnp.int32)[:, None]
    q_size = jnp.take_along_axis(size, which, 1)[:, 0]
    q_shot = jnp.take_along_axis(shots, which, 1)[:, 0]
    offset = 1 + jnp.floor(u[:, 2] * (q_size - 1)).astype(jnp.int32)  # another drawing
    same = jax.random.uniform(jax.random.fold_in(key, 1), (n,)) < identical
    offset = jnp.where(same, 0, offset)
    query = jnp.take_along_axis(start, which, 1)[:, 0] + (q_shot + offset) % q_size
    images = jnp.concatenate([start + shots, query[:, None]], axis=1)
    return images, context_labels, 2 * query_label - 1


def sequences(tokens: jax.Array, emb: Embeddings, images: jax.Array,
              context_labels: jax.Array) -> jax.Array:
    """Episode inputs ``x0: (n, T, N0)`` from bank ``tokens: (n_images, n_patches, N0)``,
    ``images: (n, 3)`` and ``context_labels: (n, 2)``."""
    n, n_patches = images.shape[0], tokens.shape[1]
    label_index = jnp.concatenate([context_labels, jnp.full((n, 1), 2, context_labels.dtype)], 1)
    x = tokens[images] + jnp.asarray(emb.label, tokens.dtype)[label_index][:, :, None]
    return x.reshape(n, 3 * n_patches, -1) + jnp.asarray(emb.position, tokens.dtype)


SPLITS = ("train", "validation", "test")


def dataset(key: jax.Array, train_archive: str | Path, test_archive: str | Path,
            cfg: dict) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """The datasets and attributes of the study's data: training characters all of
    ``train_archive`` (with ``cfg['augment_rotations']`` also rotated, ``load_bank``); the
    characters of ``test_archive`` split at random into validation
    (``cfg['validation_fraction']``) and test characters. Datasets per split: ``tokens/{split}:
    (n, n_patches, N0)``, ``character/{split}: (n,)``, ``episodes/{split}/{images,
    context_labels, y}`` (``cfg['n_{split}']`` balanced episodes); ``embeddings/{position,
    label}``. ``key`` -> character split, embeddings, train, validation, test episodes."""
    train, train_names = load_bank(train_archive, cfg["image_size"], cfg["patch"],
                                   cfg["augment_rotations"])
    held, held_names = load_bank(test_archive, cfg["image_size"], cfg["patch"])
    k_split, k_emb, *k_episodes = jax.random.split(key, 5)
    order = np.asarray(jax.random.permutation(k_split, held.n_characters))
    n_val = max(1, round(cfg["validation_fraction"] * held.n_characters))
    if held.n_characters - n_val < 2 or n_val < 2:
        raise ValueError(
            f"{test_archive}: {held.n_characters} characters cannot be split into validation "
            f"and test sets of at least 2 (omniglot.validation_fraction)"
        )
    banks = {"train": train, "validation": held.subset(order[:n_val]),
             "test": held.subset(order[n_val:])}
    names = {"train": train_names, "validation": [held_names[i] for i in np.sort(order[:n_val])],
             "test": [held_names[i] for i in np.sort(order[n_val:])]}
    n_patches, width = train.tokens.shape[1:]
    emb = embeddings(k_emb, n_patches, width, cfg["positional_scale"], cfg["label_scale"])
    data = {"embeddings/position": emb.position, "embeddings/label": emb.label}
    for split, k in zip(SPLITS, k_episodes, strict=True):
        bank = banks[split]
        ep = draw_episodes(k, bank, cfg[f"n_{split}"])
        data |= {f"tokens/{split}": bank.tokens, f"character/{split}": bank.character,
                 f"episodes/{split}/images": ep.images,
                 f"episodes/{split}/context_labels": ep.context_labels,
                 f"episodes/{split}/y": ep.y}
    attrs = {
        "characters": json.dumps(names),
        "tokens": 3 * n_patches,
        "N0": width,
        "episode": "2-way 1-shot in context: context, context, query; labels 0/1 at random; "
                   "y = 2 label(query) - 1; balanced (first half y = +1)",
        "preprocessing": f"bilinear resize to {cfg['image_size']}, (x - {MEAN}) / {STD}, "
                         f"grey x3, {cfg['patch']}x{cfg['patch']} patches, LayerNorm without "
                         "affine parameters",
        "key_split": "stage_key(seed, 'omniglot_data', 0) -> character split, embeddings, "
                     "train, validation, test episodes",
    }
    return data, attrs
