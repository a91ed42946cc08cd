"""The run names of the protein study's fits, read by its rules when Snakemake plans a run (no
JAX here): ``factored-H<h>``, ``factored_softmax-H<h>`` and ``factored_lowrank-H<h>``
(``FACTORED_PREFIXES``) for every ``h`` of ``proteins.heads``, ``plmdca``, ``vanilla1`` and
``vanilla3``, and the names of their contact scores."""

from __future__ import annotations

from collections.abc import Sequence

from workflow_lib.proteins import FACTORED_PREFIXES
from workflow_lib.proteins.contacts import JACOBIAN_SUFFIX

TRANSFORMERS = ("vanilla1", "vanilla3")


def model_names(models: Sequence[str], attention: Sequence[str], heads: Sequence[int]) -> list[str]:
    """The run names of ``models`` (``proteins.models``), in their order, a factored model's for
    every ``attention`` (``proteins.attention``) and number of ``heads`` (``proteins.heads``)."""
    names = []
    for kind in models:
        if kind == "factored":
            for form in attention:
                names += [f"{FACTORED_PREFIXES[form]}-H{h}" for h in sorted(heads)]
        else:
            names.append(kind)
    return names


def chosen_from(model: str, attention: Sequence[str], heads: Sequence[int]) -> list[str]:
    """The run names of the split fits whose choices the final fit of ``model`` (an entry of
    ``proteins.models``) takes: every factored configuration (the one chosen on the most splits
    is fitted), a transformer's own fits (the steps at which they stopped), none for plmDCA."""
    if model == "factored":
        return model_names(["factored"], attention, heads)
    return [model] if model in TRANSFORMERS else []


def score_names(model: str) -> list[str]:
    """The names of the contact scores of a fit of ``model`` in tables and contact lists: the
    model's, and for a transformer also its Jacobian scores' (``model-jacobian``)."""
    return [model, f"{model}{JACOBIAN_SUFFIX}"] if model in TRANSFORMERS else [model]
