"""Model names, in one place: the trainable architectures (the schema's enum of
``training.architectures``), the interpolated family ``interp-a<a>`` (Fig. 2d), the order of
Fig. 2b's panels and the pseudo-likelihood fits (the schema's enum of ``plm.kinds``)."""

from __future__ import annotations

from collections.abc import Sequence

from workflow_lib.core.config import load_schema

_TRAINING = load_schema()["properties"]["training"]["properties"]
ARCHITECTURES: tuple[str, ...] = tuple(_TRAINING["architectures"]["items"]["enum"])
PLM_KINDS: tuple[str, ...] = tuple(load_schema()["properties"]["plm"]["properties"]["kinds"]
                                   ["items"]["enum"])  # fmt: skip
INTERPOLATED = "interp-a"  # + the mixing a, e.g. interp-a0.2
FIG2B = ("vanilla1", "vanilla3", "factored")  # Fig. 2b: J, then these maps left to right


def transformer_layers(name: str) -> int:
    """The layers of a vanilla transformer's run (``'vanilla3'`` -> 3); 0 for the attention
    layers (factored, interpolated)."""
    return int(name.removeprefix("vanilla")) if name.startswith("vanilla") else 0


def interpolated(a: float) -> str:
    """``0.2`` -> ``'interp-a0.2'``: the run name of the interpolated layer at mixing ``a``."""
    return f"{INTERPOLATED}{a:g}"


def interpolation_runs(levels: Sequence[float]) -> list[str]:
    """The interpolated layer's training runs at mixing ``levels`` (``training.interpolation_a``):
    one per level but a = 0, where the layer is factored attention (Rende et al., eq. 2 at
    a = 0) and Fig. 2d's point is the factored fit (``tables.interpolation_curve``)."""
    return [interpolated(a) for a in levels if a > 0]


def parse_arch(name: str) -> tuple[str, float | None]:
    """``'interp-a0.2'`` -> ``('interpolated', 0.2)``; other names -> ``(name, None)``."""
    if name.startswith(INTERPOLATED):
        return "interpolated", float(name[len(INTERPOLATED):])
    return name, None


def wildcard_pattern() -> str:
    """Regular expression of every run name (the ``arch`` wildcard of the training rule)."""
    return "|".join([*ARCHITECTURES, INTERPOLATED + r"[0-9.e+-]+"])
