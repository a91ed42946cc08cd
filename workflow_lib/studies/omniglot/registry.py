"""The one-shot Omniglot study of the attention-paths paper (Tiberi, Mignacco, Irie &
Sompolinsky, NeurIPS 2024, Fig. 3): images and episodes, the gradient-descent model, its frozen
heads' path-attended inputs, the theory over (N, T) with T chosen on validation episodes, the GP,
posterior samples, head scores, pruning, tables, figures and the claims table.

``FLOW`` is the study's artefact graph (rule -> the artefacts it reads and the one it writes, by
name: ``<name>.h5`` in the study's folder); ``rules/omniglot.smk`` and the runner outside
Snakemake (``python -m workflow_lib omniglot``) both build on it."""

from __future__ import annotations

from workflow_lib.core.registry import (
    Panel,
    Rule,
    Study,
    claims_rule,
    constant,
    figure_rule,
    no_params,
)

PACKAGE = "workflow_lib.studies.omniglot"
DRAW = f"{PACKAGE}.figures"
DATA_KEYS = ("data_dir", "train_archive", "test_archive", "augment_rotations",
             "validation_fraction", "image_size", "patch", "positional_scale", "label_scale",
             "n_train", "n_validation", "n_test")
STAGE_KEYS = {  # the omniglot config keys each stage depends on, besides DATA_KEYS
    "omniglot_data": (),
    "omniglot_train": ("network", "training"),
    "omniglot_features": ("prior_variance",),
    "omniglot_theory": ("prior_variance", "widths", "temperatures", "sample_width", "n_pcs",
                        "solver"),
    "omniglot_sample": ("prior_variance", "sample_width", "sampler"),
    "omniglot_prune": ("random_orders",),
}
FLOW = {  # rule -> (artefacts read, artefact written); the archives are the data rule's inputs
    "omniglot_data": ((), "data"),
    "omniglot_train": (("data",), "model"),
    "omniglot_features": (("data", "model"), "features"),
    "omniglot_theory": (("features",), "theory"),
    "omniglot_sample": (("features", "theory"), "samples"),
    "omniglot_prune": (("data", "model", "theory"), "pruning"),
}


def _params(stage: str):
    def build(cfg, wc) -> dict:
        omni = cfg["omniglot"]
        return {"seed": cfg["seed"],
                "omniglot": {k: omni[k] for k in (*DATA_KEYS, *STAGE_KEYS[stage])}}

    return build


def _episodes(cfg) -> int:
    o = cfg["omniglot"]
    return o["n_train"] + o["n_validation"] + o["n_test"]


def _train_minutes(cfg, wc) -> float:
    o = cfg["omniglot"]
    return 10 + o["training"]["steps"] * o["training"]["batch"] * o["network"]["width"] ** 2 * 1e-9


def _theory_minutes(cfg, wc) -> float:
    o = cfg["omniglot"]
    return 10 + len(o["widths"]) * len(o["temperatures"]) * _episodes(cfg) ** 2 * 1e-6


def _sample_minutes(cfg, wc) -> float:
    o, s = cfg["omniglot"], cfg["omniglot"]["sampler"]
    work = o["sample_width"] * (s["warmup"] + s["samples"]) * s["chains"] * o["n_train"]
    return 10 + work * 1e-5


def _mem(cfg, wc) -> float:
    return 4000 + 2 * _episodes(cfg) * cfg["omniglot"]["network"]["width"] * 16 * 8 / 1e6


STUDY = Study(
    name="omniglot",
    title="Attention paths: Omniglot",
    paper="Tiberi, Mignacco, Irie & Sompolinsky, Dissecting the interplay of attention paths in "
          "a statistical mechanics theory of transformers, NeurIPS 2024",
    rules=(
        Rule("omniglot_data", _params("omniglot_data"), constant(20), constant(4000)),
        Rule("omniglot_train", _params("omniglot_train"), _train_minutes, _mem, threaded=True,
             gpu=True),
        Rule("omniglot_features", _params("omniglot_features"), constant(30), _mem, threaded=True),
        Rule("omniglot_theory", _params("omniglot_theory"), _theory_minutes, _mem, threaded=True),
        Rule("omniglot_sample", _params("omniglot_sample"), _sample_minutes, _mem, threaded=True,
             gpu=True),
        Rule("omniglot_prune", _params("omniglot_prune"),
             lambda cfg, wc: 10 + cfg["omniglot"]["random_orders"] * 2, _mem, threaded=True),
        Rule("omniglot_tables", no_params, constant(10), _mem, local=True),
        claims_rule("omniglot_claims", "omniglot"),
        figure_rule("omniglot_figure"),
    ),
    tables=("accuracy", "episodes", "order_parameters", "pc_overlaps", "head_scores",
            "cumulative_pruning"),
    claims="omniglot/tables/claims.csv",
    claims_of="workflow_lib.studies.omniglot.claims:omniglot_claims",
    panels=(
        Panel("omniglot_fig3b", ("accuracy",), f"{DRAW}:accuracy",
              "Attention paths, Fig. 3b: test accuracy on held-out one-shot Omniglot episodes vs "
              "width N: finite-width theory with the gradient-descent model's frozen heads "
              "(temperature chosen per N on validation episodes), the GP limit (its temperature "
              "chosen the same way), NUTS samples at small N and the gradient-descent model "
              "itself."),
        Panel("omniglot_fig3c", ("order_parameters",), f"{DRAW}:order_parameters",
              "Attention paths, Fig. 3c: the 16 x 16 path-path order parameter U (paths labelled "
              "by the head of layer 1 and layer 2): theory and posterior samples at the scoring "
              "width, and the overlaps of the gradient-descent model's effective path weights "
              "(own colour scale)."),
        Panel("omniglot_fig3d", ("pc_overlaps",), f"{DRAW}:pc_overlaps",
              "Attention paths, Fig. 3d: overlap of the top kernel principal components with the "
              "labels on the training episodes, finite width vs GP limit."),
        Panel("omniglot_fig3e", ("head_scores", "claims"), f"{DRAW}:head_scores",
              "Attention paths, Fig. 3e: accuracy drop of the gradient-descent model when a "
              "single head is pruned vs that head's score from the theory's U."),
        Panel("omniglot_fig3f", ("cumulative_pruning",), f"{DRAW}:cumulative_pruning",
              "Attention paths, Fig. 3f: test accuracy of the gradient-descent model after "
              "pruning a growing number of heads, lowest score first (and highest score first "
              "for contrast)."),
    ),
)


def stage_params(cfg, stage: str) -> dict:
    """The job params of Omniglot stage ``stage`` for the full config ``cfg``."""
    return STUDY.rule(stage).params(cfg, {})
