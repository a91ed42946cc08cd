"""The one-shot Omniglot study's artefacts: schema tags and what a stage reads from them (the
episodes of a data artefact, the network of a model artefact, path-attended inputs)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.attention import icl
from workflow_lib.core.artefacts import Artefact, ArtefactError, read_artefact
from workflow_lib.studies.omniglot.data import SPLITS, Bank, Embeddings, sequences
from workflow_lib.studies.omniglot.training import Trained

# The schema tags of the study's artefacts (attribute ``schema``).
OMNIGLOT_DATA = "omniglot-data/1"
OMNIGLOT_MODEL = "omniglot-model/1"
OMNIGLOT_FEATURES = "omniglot-features/1"
OMNIGLOT_THEORY = "omniglot-theory/2"
OMNIGLOT_SAMPLES = "omniglot-samples/2"
OMNIGLOT_PRUNING = "omniglot-pruning/1"


class EpisodeData:
    """A data artefact in memory: ``bank(split)`` its images, ``inputs(split)`` the fixed
    episodes' ``x0: (n, T, N0)`` and ``y: (n,)``."""

    def __init__(self, path: str):
        self.art = read_artefact(path, OMNIGLOT_DATA, required=("embeddings/label", "tokens/train"))
        self.emb = Embeddings(self.art["embeddings/position"],
                                       self.art["embeddings/label"])

    def bank(self, split: str) -> Bank:
        return Bank(self.art[f"tokens/{split}"], self.art[f"character/{split}"])

    def inputs(self, split: str) -> tuple[jax.Array, jax.Array]:
        ep = f"episodes/{split}"
        x0 = sequences(jnp.asarray(self.art[f"tokens/{split}"]), self.emb,
                                self.art[f"{ep}/images"], self.art[f"{ep}/context_labels"])
        return x0, jnp.asarray(self.art[f"{ep}/y"])


def model_datasets(trained: Trained, net: icl.Net, emb: Embeddings) -> dict:
    """The datasets of a model artefact: ``params/*``, the heads ``attention/{l}: (H, N0, N0)``
    = KᵀQ/sqrt(G), ``history/{steps, loss, validation}`` and the frozen embeddings it was
    trained with."""
    return {**{f"params/{k}": v for k, v in trained.params.items()},
            **{f"attention/{layer + 1}": W
               for layer, W in enumerate(icl.attention_logits_weights(trained.params, net))},
            "history/steps": trained.steps, "history/loss": trained.loss,
            "history/validation": trained.validation,
            "embeddings/position": emb.position, "embeddings/label": emb.label}


def read_model(path: str, data: EpisodeData | None = None) -> tuple[Artefact, icl.Params,
                                                                     icl.Net]:
    """A model artefact, its parameters and sizes; with ``data``, check that the model was
    trained with that data's frozen embeddings (a shipped model needs the same seed, image size,
    patch and embedding scales)."""
    art = read_artefact(path, OMNIGLOT_MODEL, required=("params/a", "params/V0", "attention/1",
                                               "embeddings/label"))
    if data is not None:
        for name in ("position", "label"):
            ours, theirs = art[f"embeddings/{name}"], data.art[f"embeddings/{name}"]
            if ours.shape != theirs.shape or not np.allclose(ours, theirs, atol=1e-6):
                raise ArtefactError(
                    f"{path}: trained with other {name} embeddings than {data.art.path} "
                    "(omniglot seed, image_size, patch or embedding scales differ)")
    params = {k.removeprefix("params/"): jnp.asarray(v) for k, v in art.data.items()
              if k.startswith("params/")}
    return art, params, icl.Net(*(int(art.attrs[k]) for k in icl.Net._fields))


def read_features(path: str) -> tuple[dict[str, jax.Array], tuple[int, ...]]:
    """``phi/{split}: (n, N0, Pi)``, ``y/{split}: (n,)`` and the heads per layer."""
    art = read_artefact(path, OMNIGLOT_FEATURES, required=[f"phi/{s}" for s in SPLITS])
    return {k: jnp.asarray(v) for k, v in art.data.items()}, tuple(json.loads(art.attrs["heads"]))
