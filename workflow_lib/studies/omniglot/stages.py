"""Stages of the one-shot Omniglot study (Tiberi et al. 2024, Fig. 3),
each read, call, write: images and episodes (``studies.omniglot.data``), gradient descent
(``studies.omniglot.training``), path-attended inputs and the theory grid
(``studies.omniglot.theory``), posterior samples (``attention.sampling``), pruning
(``attention.heads``); tables and figures: ``studies.omniglot.stages_results``."""

from __future__ import annotations

import json
import logging

import jax
import numpy as np

from workflow_lib.attention import icl, sampling
from workflow_lib.attention.heads import prune
from workflow_lib.core.artefacts import read_artefact, write_artefact
from workflow_lib.core.keys import stage_key
from workflow_lib.core.registry import Job
from workflow_lib.runtime.checkpoints import resumable
from workflow_lib.studies.omniglot import artefacts, theory, training
from workflow_lib.studies.omniglot.data import SPLITS, dataset

log = logging.getLogger("workflow_lib.attention")


def _key(p: dict, stage: str) -> jax.Array:
    return stage_key(p["seed"], stage, 0)


def _write(path: str, schema: str, data: dict, p: dict, attrs: dict) -> None:
    write_artefact(path, schema, data, p, seeds={"seed": p["seed"]}, attrs=attrs)


def omniglot_data(job: Job) -> None:
    """Images of the training, validation and test characters, the frozen embeddings and the
    fixed episodes (``studies.omniglot.data.dataset``)."""
    p, cfg = job.params, job.params["omniglot"]
    data, attrs = dataset(_key(p, "omniglot_data"), job.input["train_archive"],
                                   job.input["test_archive"], cfg)
    _write(job.output["data"], artefacts.OMNIGLOT_DATA, data, p, attrs)


@resumable
def omniglot_train(job: Job) -> None:
    """Train the gradient-descent model on fresh episodes of the training characters, with the
    validation accuracy after every block (``studies.omniglot.training``), resuming from the
    job's checkpoint (``workflow_lib.runtime.checkpoints``)."""
    p, cfg = job.params, job.params["omniglot"]
    data = artefacts.EpisodeData(job.input["data"])
    bank = data.bank("train")
    net = icl.Net(*(cfg["network"][k] for k in ("width", "head_dim", "layers", "heads")),
                  bank.tokens.shape[-1])
    recipe = training.Recipe.from_config(cfg["training"])
    trained = training.train(_key(p, "omniglot_train"), net, recipe, bank.tokens,
                                   bank.starts, data.emb, data.inputs("validation"))
    acc = {s: icl.network_accuracy(trained.params, net, *data.inputs(s)) for s in SPLITS}
    log.info("gradient descent: %.0f s; accuracy %s", trained.seconds,
             {k: round(v, 3) for k, v in acc.items()})
    left = bool(trained.loss[-1] < training.PLATEAU_LOSS)
    if not left:
        log.warning("training loss %.3f: still on the plateau (1 = predicting 0); the heads "
                    "carry nothing for the theory", trained.loss[-1])
    _write(job.output["model"], artefacts.OMNIGLOT_MODEL,
           artefacts.model_datasets(trained, net, data.emb), p,
           {**net._asdict(), **{f"accuracy_{k}": v for k, v in acc.items()},
            "train_seconds": trained.seconds, "device": str(jax.devices()[0]),
            "left_plateau": left,
            "recipe": json.dumps(recipe._asdict()),
            "loss": "square loss on y = +-1, fresh episodes each step"})


def omniglot_features(job: Job) -> None:
    """Path-attended inputs ``phi/{split}: (n, N0, Pi)`` and ``y/{split}`` of the fixed episodes
    under the model's frozen heads."""
    p, cfg = job.params, job.params["omniglot"]
    data = artefacts.EpisodeData(job.input["data"])
    art, _, net = artefacts.read_model(job.input["model"], data)
    Ws = [art[f"attention/{layer + 1}"] for layer in range(net.layers)]
    out = {}
    for split in SPLITS:
        x0, out[f"y/{split}"] = data.inputs(split)
        out[f"phi/{split}"] = theory.episode_features(x0, Ws, cfg["prior_variance"])
    _write(job.output["features"], artefacts.OMNIGLOT_FEATURES, out, p,
           {"heads": json.dumps(net.per_layer), "readout": "mean pooling", "paths": "h1-major",
            "model": str(job.input["model"])})


def omniglot_theory(job: Job) -> None:
    """The theory for every (N, T), the GP, T chosen per N on validation episodes
    (``studies.omniglot.theory.grid``), PC overlaps and head scores at ``sample_width``."""
    p, cfg = job.params, job.params["omniglot"]
    f, heads = artefacts.read_features(job.input["features"])
    widths, temps, s2 = sorted(cfg["widths"]), sorted(cfg["temperatures"]), cfg["prior_variance"]
    g = theory.grid(f, heads, widths, temps, s2, cfg["solver"]["max_iter"],
                         cfg["solver"]["gtol"])
    score_width = cfg["sample_width"] if cfg["sample_width"] in widths else widths[0]
    _write(job.output["theory"], artefacts.OMNIGLOT_THEORY,
           theory.grid_datasets(g, f, heads, widths, temps, score_width, cfg["n_pcs"]), p,
           {"heads": json.dumps(heads), "score_width": score_width,
            "score_temperature": temps[g.selected[widths.index(score_width)]],
            "n_test": int(f["y/test"].shape[0]),
            "temperature_selection": "best validation accuracy per N (lowest T among ties); "
                                     "the test set never enters the choice",
            "solver": "L-BFGS-B on Cholesky factors from the GP point"})


def omniglot_sample(job: Job) -> None:
    """NUTS samples of every weight at ``sample_width`` and the temperature the theory selected
    there (datasets as ``paths_sample``, and ``correct/test: (n_test,)``, 1 where the
    posterior-mean predictor gets a test episode right)."""
    p, cfg, scfg = job.params, job.params["omniglot"], job.params["omniglot"]["sampler"]
    f, heads = artefacts.read_features(job.input["features"])
    th = read_artefact(job.input["theory"], artefacts.OMNIGLOT_THEORY,
                       required=("selected", "widths"))
    N = cfg["sample_width"]
    T = float(th["temperatures"][th["selected"][list(th["widths"]).index(N)]])
    s = sampling.run_nuts(
        _key(p, "omniglot_sample"), f["phi/train"], f["y/train"], heads, N, T,
        cfg["prior_variance"], variables="weights", warmup=scfg["warmup"],
        samples=scfg["samples"], chains=scfg["chains"], target_accept=scfg["target_accept"],
        max_tree_depth=scfg["max_tree_depth"],
    )
    acc, per_chain = s.accuracy(f["phi/test"], f["y/test"])
    log.info("N=%d, T=%g: sampled test accuracy %.3f (chains %s)", N, T, acc,
             np.round(per_chain, 3))
    correct = s.correct(f["phi/test"], f["y/test"]).astype(np.int8)
    _write(job.output["samples"], artefacts.OMNIGLOT_SAMPLES,
           {**s.datasets(per_chain), "correct/test": correct}, p,
           {"width": N, "temperature": T, "accuracy": acc, "rhat": s.rhat, "ess": s.ess,
            "warmup_seconds": s.warmup_seconds, "sampling_seconds": s.sampling_seconds,
            "sampler": "numpyro NUTS, every weight sampled"})


def omniglot_prune(job: Job) -> None:
    """Single-head and cumulative pruning of the gradient-descent model in head-score order and
    in random orders (``heads.prune``), on the test episodes."""
    p = job.params
    data = artefacts.EpisodeData(job.input["data"])
    _, params, net = artefacts.read_model(job.input["model"], data)
    x0, y = data.inputs("test")
    th = read_artefact(job.input["theory"], artefacts.OMNIGLOT_THEORY, required=("head_scores",))
    paths = icl.outputs(params, net, x0)  # (n, H^L): every pruning is a weighting of these
    pr = prune(lambda keep: icl.accuracy(paths, y, keep), th["head_scores"],
                          _key(p, "omniglot_prune"), p["omniglot"]["random_orders"])
    log.info("unpruned %.3f; single-head pruning (rows: layers) %s", pr.full,
             np.round(pr.single, 3).tolist())
    _write(job.output["pruning"], artefacts.OMNIGLOT_PRUNING, {"head_scores": th["head_scores"],
                                               **pr.datasets()}, p,
           {"accuracy": pr.full, "score_width": int(th.attrs["score_width"]),
            "score_temperature": float(th.attrs["score_temperature"]),
            "pruning": "head removed; the remaining heads of its layer summed with "
                       "1/sqrt(#left)"})
