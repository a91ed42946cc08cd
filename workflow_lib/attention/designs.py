"""The attention-paths experiments' designs (Tiberi et al. 2024, Fig. 2c-e): the heads of each
layer, the sub-networks whose GP limits are drawn as reference lines, the paths' names and the
order of the U heat maps. Plain data, without JAX, so that the figure jobs read it cheaply (the
task's data and heads: ``workflow_lib.attention.tasks``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Experiment:
    """A network (head names per layer) with the sub-networks whose GP limits are drawn as
    reference lines; ``paths`` names the paths h1-major and ``display`` is the order of the U
    heat maps. Its data's σ⊥ is the config's ``paths.sigma_perp.<experiment>``."""

    network: tuple[tuple[str, ...], ...]
    gp_lines: dict[str, tuple[tuple[str, ...], ...]]
    paths: tuple[str, ...]
    display: tuple[str, ...]


EXPERIMENTS = {
    # Fig. 2c, d: g = (same, uniform), a1 = (same, random), d = (random, uniform), a2 = (random,
    # random).
    "four_paths": Experiment(
        network=(("same", "random1"), ("uniform", "random2")),
        gp_lines={"g": (("same",), ("uniform",)), "g+d": (("same", "random1"), ("uniform",))},
        paths=("g", "a1", "d", "a2"),
        display=("g", "d", "a1", "a2"),
    ),
    # Fig. 2e: the denoising path is uniform -> uniform (the layer-1 "blank" head with
    # perturbation 0 is exactly uniform attention).
    "two_paths": Experiment(
        network=(("same", "uniform"), ("uniform",)),
        gp_lines={"g": (("same",), ("uniform",))},
        paths=("g", "d"),
        display=("g", "d"),
    ),
}
