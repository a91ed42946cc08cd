"""Evaluation of one masked-language model on the test set: test losses and the reconstruction
of ``J`` from its attention map (``metrics.reconstruction``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from workflow_lib.mlm.metrics import reconstruction
from workflow_lib.mlm.models import ArchSpec, Params, predict_all_sites

Array = jax.Array

EVAL_KEYS = ("test_loss", "test_loss_heldout", "recon_error", "pearson_r")


def evaluate(spec: ArchSpec, params: Params, seqs: Array, heldout: Array,
             J: Array) -> tuple[dict[str, Array], Array]:  # fmt: skip
    """Test metrics (``EVAL_KEYS``, scalars) and the attention map ``(L, L)`` of one model.

    ``seqs: (M_test, L)`` the test sequences; ``heldout: (M_test,)`` float, 1 for test sequences
    absent from the training set: the held-out test loss averages only those (NaN when there
    are none); ``J: (L, L)`` the true couplings.
    """
    logits, att = predict_all_sites(spec, params, seqs)
    logp = jax.nn.log_softmax(logits, axis=-1)
    per_seq = -jnp.mean(jnp.take_along_axis(logp, seqs[..., None], axis=-1)[..., 0], axis=-1)
    error, r, _ = reconstruction(att, J, gauge=spec.kind != "transformer")
    metrics = {
        "test_loss": jnp.mean(per_seq),
        "test_loss_heldout": jnp.sum(heldout * per_seq) / jnp.sum(heldout),
        "recon_error": error,
        "pearson_r": r,
    }
    return metrics, att
