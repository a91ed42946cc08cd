"""The entries of ``proteins.families`` and each family's factored candidates: its own ``heads``
and ``attention`` where the entry sets them, else the section's (read by the rules, the registry
and the resource laws)."""

from __future__ import annotations

from workflow_lib.core.registry import Config
from workflow_lib.proteins.run_names import model_names


def entry(cfg: Config, name: str) -> dict:
    """The ``proteins.families`` entry of family ``name``."""
    return next(each for each in cfg["proteins"]["families"] if each["name"] == name)


def candidates(cfg: Config, name: str) -> tuple[list[str], list[int]]:
    """``(attention, heads)``: the attention forms and head counts of factored attention that
    family ``name``'s split fits try, the entry's own or ``proteins.attention`` and ``.heads``."""
    p, family = cfg["proteins"], entry(cfg, name)
    return family.get("attention", p["attention"]), family.get("heads", p["heads"])


def family_models(cfg: Config, name: str) -> list[str]:
    """The run names of family ``name``'s split fits: every entry of ``proteins.models``, a
    factored model's for each of the family's candidates (``candidates``)."""
    return model_names(cfg["proteins"]["models"], *candidates(cfg, name))
