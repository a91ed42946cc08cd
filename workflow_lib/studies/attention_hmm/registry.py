"""The attention-paths study on the hidden-Markov-chain task (Tiberi, Mignacco, Irie &
Sompolinsky, NeurIPS 2024, Fig. 2): path-attended inputs per realisation and experiment, the
order parameter U(N) with the GP limits, posterior samples at small N, tables, the Fig. 2c-e
panels and the claims table."""

from __future__ import annotations

from collections.abc import Callable

from workflow_lib.core.registry import (
    PER_JOB,
    Config,
    Panel,
    Rule,
    Study,
    claims_rule,
    constant,
    figure_rule,
    no_params,
)

PACKAGE = "workflow_lib.studies.attention_hmm"
DRAW = f"{PACKAGE}.figures"


def _has(experiment: str) -> Callable[[Config], bool]:
    """Whether a config runs ``experiment`` (``paths.experiments``): its panels' condition."""
    return lambda cfg: experiment in cfg["paths"]["experiments"]
# the ``paths`` config keys every rule of an experiment depends on (its data and heads)
DATA_KEYS = ("n_train", "n_test", "tokens", "features", "p_stay_plus", "p_stay_minus",
             "noise_in_plane", "sigma_perp", "attention_beta", "random_head_perturbation",
             "prior_variance")


def _params(*keys: str):
    """The job params of a rule: seed, realisation, experiment (and width) from the wildcards,
    plus ``DATA_KEYS`` and ``keys`` of the ``paths`` config."""

    def build(cfg, wc):
        params = {"seed": cfg["seed"], "realisation": int(wc["r"]), "experiment": wc["experiment"]}
        if "N" in wc:
            params["width"] = int(wc["N"])
        params["paths"] = {k: cfg["paths"][k] for k in (*DATA_KEYS, *keys)}
        return params

    return build


def _theory_minutes(cfg, wc) -> float:
    p = cfg["paths"]
    return 10 + len(p["widths"]) * p["n_train"] ** 2 * p["features"] * 1e-6


def _sample_minutes(cfg, wc) -> float:
    """NUTS: width (10 for the order parameters, whose cost does not grow with it) x draws x
    chains x training sequences x tokens."""
    p, s = cfg["paths"], cfg["paths"]["sampler"]
    width = 10 if s["variables"] == "order_parameters" else int(wc["N"])
    work = width * (s["warmup"] + s["samples"]) * s["chains"] * p["n_train"] * p["tokens"]
    return 10 + work * 1e-7


def _features_mb(cfg, wc) -> float:
    p = cfg["paths"]
    return 2000 + 8 * (p["n_train"] + p["n_test"]) * p["tokens"] * p["features"] * 16 / 1e6


STUDY = Study(
    name="attention_hmm",
    title="Attention paths",
    paper="Tiberi, Mignacco, Irie & Sompolinsky, Dissecting the interplay of attention paths in "
          "a statistical mechanics theory of transformers, NeurIPS 2024",
    rules=(
        Rule("paths_features", _params(), constant(10), _features_mb, chunk=PER_JOB),
        Rule("paths_theory", _params("widths", "temperature", "solver", "n_pcs"),
             _theory_minutes, _features_mb, chunk=PER_JOB),
        Rule("paths_sample", _params("temperature", "sampler"), _sample_minutes,
             lambda cfg, wc: 2 * _features_mb(cfg, wc), threaded=True, gpu=True, chunk=PER_JOB),
        Rule("paths_tables", no_params, constant(10), constant(2000), local=True),
        figure_rule("paths_figure"),
        claims_rule("paths_claims", "attention_hmm"),
    ),
    tables=("accuracy", "order_parameters", "pc_overlaps", "diagnostics"),
    claims="paths/tables/claims.csv",
    claims_of="workflow_lib.studies.attention_hmm.claims:hmm_claims",
    folders=("paths",),
    realisations="paths.realisations",
    panels=(
        Panel("paths_fig2c", ("accuracy", "order_parameters"), f"{DRAW}:fig2c",
              "Attention paths, Fig. 2c: test accuracy vs width N on the hidden-Markov-chain task "
              "(4 paths, sigma_perp = 1): finite-width theory, NUTS samples, and the GP limits of "
              "all paths, of path g and of g+d; below, the order parameter U (paths g, d, a1, "
              "a2) from theory at N = 10, 100, 1000 and sampled at N = 10.", _has("four_paths")),
        Panel("paths_fig2d", ("pc_overlaps",), f"{DRAW}:pc_overlaps",
              "Attention paths, Fig. 2d: overlap of the top-30 kernel principal components with "
              "the labels, N = 10 vs the GP limit.", _has("four_paths")),
        Panel("paths_fig2e", ("accuracy", "order_parameters"), f"{DRAW}:fig2e",
              "Attention paths, Fig. 2e: as 2c for sigma_perp = 5 and the two-path network (g "
              "and d).", _has("two_paths")),
    ),
)
