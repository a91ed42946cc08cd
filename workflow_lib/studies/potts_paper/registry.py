"""The Potts paper's rules, tables and panels (Rende, Gerace, Laio & Goldt, Phys. Rev. Research
6, 023057 (2024)): couplings and Gibbs samples per realisation, MLM training per architecture,
pseudo-likelihood fits, the sample-complexity sweep (Fig. 3 right), the replica theory (Fig. 3
left), the tables across realisations, the figures and the claims table."""

from __future__ import annotations

from workflow_lib.core.registry import (
    PER_JOB,
    Panel,
    Rule,
    Study,
    claims_rule,
    constant,
    figure_rule,
    no_params,
)
from workflow_lib.mlm.architectures import FIG2B, parse_arch

PACKAGE = "workflow_lib.studies.potts_paper"
DRAW = f"{PACKAGE}.figures"


def family_option(training: dict, family: str, name: str) -> int:
    """Option ``name`` of model family ``family`` (``parse_arch``) under the ``training``
    config: its override ``arch_<name>[family]``, else ``name``."""
    return training[f"arch_{name}"].get(family, training[name])


def _realisation(cfg, wc, **slice_):
    return {"seed": cfg["seed"], "realisation": int(wc["r"]), **slice_}


def _chunk(cfg, wc, **slice_):
    """The slice of a job over a chunk of realisations (``registry.chunks``)."""
    return {"seed": cfg["seed"], "realisations": [int(r) for r in wc["realisations"]], **slice_}


def _replica(cfg, wc):
    return {"seed": cfg["seed"], "replica": cfg["replica"]}


def _sequences(cfg) -> int:
    return cfg["sampling"]["n_train"] + cfg["sampling"]["n_test"]


def _sample_minutes(cfg, wc) -> float:
    """Spin updates of every production chain of the β tuning, at 2e6 updates per second and
    thread for C = 20 (scaled by C): a rate below the sampler's, not a measurement."""
    s, t, p = cfg["sampling"], cfg["beta_tuning"], cfg["potts"]
    chains = 1 if p["beta"] is not None else t["candidates"] * t["rounds"] + t["grid_points"]
    updates = p["L"] * (s["burn_in"] + _sequences(cfg) * s["sweeps_between"]) * chains
    return 10 + updates * (p["C"] / 20) / 2e6 / 60 / cfg["compute"]["threads"]


def _train_minutes(cfg, wc) -> float:
    """Epochs (the family's, or its cap) x sequences x L x C x restarts x realisations of the
    chunk, a transformer's restart counted 8 times."""
    t, p = cfg["training"], cfg["potts"]
    family, _ = parse_arch(wc["arch"])
    deep = 8 if family.startswith("vanilla") else 1
    work = (family_option(t, family, "epochs") * cfg["sampling"]["n_train"] * p["L"] * p["C"]
            * family_option(t, family, "restarts") * deep)
    return 15 + work * len(wc["realisations"]) * 2.5e-9


def _plm_minutes(cfg, wc) -> float:
    p = cfg["potts"]
    return 10 + cfg["plm"]["max_iter"] * cfg["sampling"]["n_train"] * p["L"] ** 2 * p["C"] * 2e-10


def _sweep_minutes(cfg, wc) -> float:
    s, p = cfg["sample_complexity"], cfg["potts"]
    starts = s["restarts"] + 1
    return 10 + starts * s["max_iter"] * sum(s["M"]) * p["L"] ** 2 * p["C"] * 1e-11


def _data_mb(cfg, wc) -> float:
    """The data set and the β tuning's chains in memory, with room for JAX."""
    return 2000 + 64 * _sequences(cfg) * cfg["potts"]["L"] * cfg["potts"]["C"] / 1e6


def _train_mb(cfg, wc) -> float:
    """Room for JAX twice, and twice the data set's share of ``_data_mb`` per realisation of the
    chunk."""
    return 4000 + 2 * len(wc["realisations"]) * (_data_mb(cfg, wc) - 2000)


def _has_fig2b(cfg) -> bool:
    """Fig. 2b shows J and the maps of the trained architectures it compares (``FIG2B``)."""
    return any(arch in FIG2B for arch in cfg["training"]["architectures"])


def _has_fig2d(cfg) -> bool:
    """Fig. 2d is a curve over the interpolation levels: it needs two of them or more."""
    return len(cfg["training"]["interpolation_a"]) > 1


def _replica_minutes(cfg, wc) -> float:
    r = cfg["replica"]
    return 10 + r["L"] ** 3 * len(r["sim_alphas"]) * r["realisations"] * len(r["lambdas"]) * 1e-9


STUDY = Study(
    name="potts_paper",
    title="Potts paper",
    paper="Rende, Gerace, Laio & Goldt, Mapping of attention mechanisms to a generalized Potts "
          "model, Phys. Rev. Research 6, 023057 (2024)",
    rules=(
        Rule("potts_couplings", lambda cfg, wc: _realisation(cfg, wc, potts=cfg["potts"]),
             constant(10), constant(1000), chunk=PER_JOB),
        Rule("potts_sample",
             lambda cfg, wc: _realisation(cfg, wc, potts=cfg["potts"], sampling=cfg["sampling"],
                                          beta_tuning=cfg["beta_tuning"]),
             _sample_minutes, _data_mb, threaded=True, gpu=True, chunk=PER_JOB),
        Rule("potts_train",
             lambda cfg, wc: _chunk(cfg, wc, arch=wc["arch"], training=cfg["training"]),
             _train_minutes, _train_mb, threaded=True, gpu=True, chunk=PER_JOB,
             side_by_side=True),
        Rule("potts_plm", lambda cfg, wc: _realisation(cfg, wc, kind=wc["kind"], plm=cfg["plm"]),
             _plm_minutes, _data_mb, threaded=True, chunk=PER_JOB),
        Rule("potts_sample_complexity",
             lambda cfg, wc: _realisation(cfg, wc, sample_complexity=cfg["sample_complexity"],
                                          l2_full=cfg["plm"]["l2_full"]),
             _sweep_minutes, _data_mb, threaded=True, chunk=PER_JOB),
        Rule("potts_replica_theory", _replica, constant(30), constant(2000)),
        Rule("potts_replica_sims", _replica, _replica_minutes,
             lambda cfg, wc: 2000 + 3 * 8 * cfg["replica"]["L"] ** 2 / 1e6),
        Rule("potts_tables", no_params, constant(20), constant(4000), local=True),
        figure_rule("potts_figure"),
        claims_rule("potts_claims", "potts_paper"),
    ),
    claims="tables/claims.csv",
    claims_of="workflow_lib.studies.potts_paper.claims:potts_claims",
    folders=("potts", "train", "plm", "sample_complexity", "theory", "tables"),
    realisations="realisations",
    shared_tables=("replica",),
    summaries={"training_summary": f"{PACKAGE}.tables:training_summary",
               "sample_complexity_summary": f"{PACKAGE}.tables:sample_complexity_summary"},
    tables=("data", "attention_maps", "training_history", "training_final", "training_restarts",
            "training_summary", "plm", "replica", "sample_complexity", "sample_complexity_summary",
            "sample_complexity_threshold"),
    panels=(
        Panel("fig2a", ("training_history",), f"{DRAW}:fig2a_test_loss",
              "Fig. 2a: test loss (cross-entropy, nats per masked site) vs training epoch for "
              "factored attention and vanilla transformers with 1 and 3 layers on realisation 0; "
              "the dashed line is the optimal loss of the true Potts conditionals on the same "
              "test sequences."),
        Panel("fig2b", ("attention_maps",), f"{DRAW}:fig2b_from_table",
              "Fig. 2b: the interaction matrix J and the attention maps of the vanilla 1- and "
              "3-layer transformers (masked token's attention, averaged over test sequences; 3 "
              "layers: mean of the last two) and of factored attention, each after the best "
              "scalar fit to J; realisation 0 (tables/attention_maps.csv holds every "
              "realisation's maps).", _has_fig2b),
        Panel("fig2c", ("training_history",), f"{DRAW}:fig2c_reconstruction",
              "Fig. 2c: normalised reconstruction error ||J - c*A||^2/||J||^2 of the attention "
              "map vs epoch (mean and standard error over realisations)."),
        Panel("fig2d", ("training_final",), f"{DRAW}:fig2d_interpolation",
              "Fig. 2d: final test loss of the Adam solution minus the optimal loss (paired per "
              "realisation) of the single layer that mixes positions into the attention and "
              "colours into the values with weight a (a = 0: factored attention exactly, the "
              "factored fit; a = 1: the same bilinear layer "
              "at full mixing, still without a softmax); mean and standard error over "
              "realisations. For a > 0 the model contains factored attention, so any gap is "
              "optimisation or overfitting.", _has_fig2d),
        Panel("fig3_left", ("replica",), f"{DRAW}:fig3_left_replica",
              "Fig. 3 left: generalisation error of the square-loss masked-site regression in the "
              "Gaussian model; lines are the replica theory (saddle point), points the "
              "closed-form ridge / minimum-norm simulations (mean and standard error)."),
        Panel("fig3_right", ("sample_complexity", "sample_complexity_threshold"),
              f"{DRAW}:fig3_right_sample_complexity",
              "Fig. 3 right: held-out test loss of factored attention (cross-entropy, small l2, "
              "full-batch L-BFGS to a gradient tolerance) on Potts data vs the number of "
              "training sequences per site M/L, on the test sequences absent from the training "
              "set; mean and standard error over realisations; dashed, the optimal loss on the "
              "same sequences. Shaded: the capacity window in which the peak is tested, fixed "
              "by the model's parameter count before the data (alpha_P to 4 alpha_P around "
              "Cover's capacity 2 alpha_P, alpha_P = (L (L - 1) + C^2) / L^2), with the verdict "
              "of the peak test (the claims table's "
              "fig3_right.location row); dotted, the median capacity edge, where the fits stop "
              "separating their training data as far as the data allow "
              "(tables/sample_complexity_threshold.csv)."),
    ),
)
