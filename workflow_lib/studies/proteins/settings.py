"""The hyperparameters of a fit of the protein study from its slice of the config section
``proteins``: the stages and the benchmarks unpack the slice here and pass the typed values to
``workflow_lib.proteins.fitting``."""

from __future__ import annotations

from workflow_lib.proteins import factored_form
from workflow_lib.proteins.fitting import CouplingFit, TransformerFit
from workflow_lib.proteins.models import Lambdas
from workflow_lib.proteins.run_names import TRANSFORMERS
from workflow_lib.proteins.transformer import TransformerSettings


def fit_settings(name: str, proteins: dict) -> CouplingFit | TransformerFit:
    """The hyperparameters of a fit of run ``name`` from ``proteins``, the config section
    (schema-validated, defaults filled) or the slice of it that the fit's rule passes (the
    registry's: ``transformer`` for a transformer, the L-BFGS fit's keys and, where the fit may
    be of that form, ``lowrank`` for a coupling model), each number as its field's type: a
    transformer's ``TransformerFit``, a coupling model's ``CouplingFit``, ``lowrank``'s ranks and
    lambda_e only for that form (None for the others)."""
    if name in TRANSFORMERS:
        t = proteins["transformer"]
        training = TransformerSettings(
            model_dim=int(t["model_dim"]), mask_token=t["mask_token"], steps=int(t["steps"]),
            batch_size=int(t["batch_size"]), learning_rate=float(t["learning_rate"]),
            eval_every=int(t["eval_every"]), window=int(t["window"]), tol=float(t["tol"]))
        return TransformerFit(training=training, eval_sequences=int(t["eval_sequences"]),
                              jacobian_sequences=int(t["jacobian_sequences"]))
    form = factored_form(name)
    lowrank = proteins["lowrank"] if form is not None and form[0] == "lowrank" else None
    lambdas = proteins["lambdas"]
    return CouplingFit(
        fields=proteins["fields"],
        lambdas=Lambdas(couplings=float(lambdas["couplings"]),
                        factored=float(lambdas["factored"]), fields=float(lambdas["fields"]),
                        lowrank=None if lowrank is None else float(lowrank["lambda"])),
        restarts=int(proteins["restarts"]), max_iter=int(proteins["max_iter"]),
        grad_tol=float(proteins["grad_tol"]),
        qk_rank=None if lowrank is None else int(lowrank["qk_rank"]),
        value_rank=None if lowrank is None else int(lowrank["value_rank"]))
