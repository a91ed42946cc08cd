"""Stages of the attention-paths study (Tiberi et al. 2024): path-attended inputs of the
hidden-Markov-chain task, the order parameter U(N) with the GP lines and posterior samples (its
tables and figures: ``stages_results``). The science is in ``workflow_lib.attention``."""

from __future__ import annotations

import json
import logging
import time
import zlib

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.attention import designs, sampling, tasks, theory
from workflow_lib.attention import experiment as ex
from workflow_lib.core.artefacts import read_artefact, write_artefact
from workflow_lib.core.keys import stage_key
from workflow_lib.core.registry import Job
from workflow_lib.studies.attention_hmm.artefacts import PATHS_FEATURES, PATHS_SAMPLES, PATHS_THEORY

log = logging.getLogger("workflow_lib.attention")


def paths_features(job: Job) -> None:
    """Data, heads and path-attended inputs of one experiment and realisation.

    The task (``tasks.MarkovTask``) is the ``paths`` section's, with the experiment's σ⊥. The
    key ``stage_key(seed, 'paths_features', r)`` splits into training data, test data and random
    heads; it does not depend on the experiment, so both experiments see the same chains, noise
    draws and heads (only σ⊥ differs). Datasets: ``y_train: (P,)``, ``y_test: (Pt,)``,
    ``heads/{name}: (N0, N0)``, ``phi_train/{net}: (P, N0, Pi)``, ``phi_test/{net}: (Pt, N0, Pi)``
    for ``net`` in ``all`` and the GP-line sub-networks.
    """
    p, cfg, experiment = job.params, job.params["paths"], job.params["experiment"]
    task = tasks.MarkovTask(
        tokens=cfg["tokens"], features=cfg["features"], p_plus=cfg["p_stay_plus"],
        p_minus=cfg["p_stay_minus"], in_plane=cfg["noise_in_plane"],
        sigma_perp=cfg["sigma_perp"][experiment], beta=cfg["attention_beta"],
        perturbation=cfg["random_head_perturbation"],
    )
    nets = ex.networks(experiment)
    k_train, k_test, k_heads = jax.random.split(
        stage_key(p["seed"], "paths_features", p["realisation"]), 3
    )
    start = time.perf_counter()
    heads = tasks.heads(k_heads, task)
    data = {f"heads/{name}": W for name, W in heads.items()}
    for split, key, n in (("train", k_train, cfg["n_train"]), ("test", k_test, cfg["n_test"])):
        x, data[f"y_{split}"] = tasks.dataset(key, n, task)
        phis = ex.network_features(x, heads, nets, task.readout(), cfg["prior_variance"])
        data |= {f"phi_{split}/{net}": phi for net, phi in phis.items()}
    jax.block_until_ready(data)  # JAX computes asynchronously: time the work, not its dispatch
    n_seq, seconds = cfg["n_train"] + cfg["n_test"], time.perf_counter() - start
    log.info("%s r%d: %d sequences, %d networks in %.1f s (%.0f sequences/s)", experiment,
             p["realisation"], n_seq, len(nets), seconds, n_seq / seconds)
    write_artefact(
        job.output["features"], PATHS_FEATURES, data, p,
        seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={
            "experiment": experiment,
            "networks": json.dumps(nets),
            "paths": json.dumps(designs.EXPERIMENTS[experiment].paths),
            "display": json.dumps(designs.EXPERIMENTS[experiment].display),
            "sigma_perp": task.sigma_perp,
            "N0": task.width,
            "readout": "last token",
            "key_split": "stage_key(seed, 'paths_features', r) -> train, test, heads",
        },
    )


def _read_features(path: str) -> tuple[dict, dict]:
    art = read_artefact(path, PATHS_FEATURES, required=("y_train", "y_test", "phi_train/all"))
    return {k: jnp.asarray(v) for k, v in art.data.items()}, art.attrs


def paths_theory(job: Job) -> None:
    """Minimum of the action for every width, GP lines and kernel-PC overlaps.

    Datasets: ``widths: (n,)``; ``accuracy``, ``ua``, ``action``, ``grad_max``,
    ``hessian_min``, ``iterations``, ``seconds``: ``(n,)``; ``U/1: (n, Pi, Pi)``,
    ``U/2: (n, H2, H2)`` (the hierarchy); ``gp_accuracy: (n_nets,)`` in the order of attr
    ``gp_networks``; ``pc_overlaps/fw``, ``pc_overlaps/gp``: ``(n_pcs,)`` (FW at the smallest
    width).
    """
    p, cfg = job.params, job.params["paths"]
    d, attrs = _read_features(job.input["features"])
    nets = json.loads(attrs["networks"])
    heads, T, s2 = ex.layer_heads(nets["all"]), cfg["temperature"], cfg["prior_variance"]
    phi, y, y_test = d["phi_train/all"], d["y_train"], d["y_test"]
    widths = sorted(cfg["widths"])
    sols, acc = ex.width_sweep(phi, y, d["phi_test/all"], y_test, heads, widths, T, s2,
                               cfg["solver"]["max_iter"], cfg["solver"]["gtol"])
    phis = {net: (d[f"phi_train/{net}"], d[f"phi_test/{net}"]) for net in nets}
    gp_acc = ex.gp_accuracies(phis, nets, y, y_test, T, s2)
    log.info("accuracy: FW %s; GP %s", dict(zip(widths, np.round(acc, 3), strict=True)),
             dict(zip(nets, np.round(gp_acc, 3), strict=True)))
    n_pcs = min(cfg["n_pcs"], phi.shape[0])
    field = lambda name: np.array([getattr(s, name) for s in sols])  # noqa: E731
    write_artefact(
        job.output["theory"], PATHS_THEORY,
        {
            "widths": np.array(widths), "accuracy": acc, "gp_accuracy": gp_acc,
            **{k: field(k) for k in ("ua", "action", "grad_max", "hessian_min", "iterations",
                                     "seconds")},
            **{f"U/{i + 1}": np.stack([s.Us[i] for s in sols]) for i in range(len(heads))},
            "pc_overlaps/fw": theory.pc_overlaps(phi, y, jnp.asarray(sols[0].Us[0]), n_pcs),
            "pc_overlaps/gp": theory.pc_overlaps(
                phi, y, theory.gp_order_parameters(heads, s2)[0], n_pcs),
        },
        p, seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={"experiment": attrs["experiment"], "gp_networks": json.dumps(list(nets)),
               "paths": attrs["paths"], "display": attrs["display"], "pc_width": widths[0],
               "temperature": T, "solver": "L-BFGS-B on Cholesky factors from the GP point"},
    )


def paths_sample(job: Job) -> None:
    """NUTS posterior samples at one width; sampled accuracy and sampled order parameters.

    The key is ``stage_key(seed, 'paths_sample', r)`` folded with the experiment's crc32 and N.
    Datasets: ``U/1: (C, S, Pi, Pi)``, ``U/2: (C, S, H2, H2)``, ``ua: (C, S)``,
    ``mean_weights: (C, Pi, N0)``, ``accuracy_per_chain``, ``accept``, ``divergences``,
    ``mean_steps``: ``(C,)``; attrs ``accuracy`` (all chains' mean predictor), ``rhat``, ``ess``.
    """
    p, cfg, scfg = job.params, job.params["paths"], job.params["paths"]["sampler"]
    N, experiment = p["width"], p["experiment"]
    d, attrs = _read_features(job.input["features"])
    phi_test, y_test = d["phi_test/all"], d["y_test"]
    tag = zlib.crc32(experiment.encode()) & 0x7FFFFFFF
    key = jax.random.fold_in(
        jax.random.fold_in(stage_key(p["seed"], "paths_sample", p["realisation"]), tag), N
    )
    s = sampling.run_nuts(
        key, d["phi_train/all"], d["y_train"],
        ex.layer_heads(json.loads(attrs["networks"])["all"]), N, cfg["temperature"],
        cfg["prior_variance"], variables=scfg["variables"],
        warmup=scfg["warmup"], samples=scfg["samples"], chains=scfg["chains"],
        target_accept=scfg["target_accept"], max_tree_depth=scfg["max_tree_depth"],
    )
    acc, acc_chain = s.accuracy(phi_test, y_test)
    log.info("N=%d: sampled accuracy %.3f (chains %s)", N, acc, np.round(acc_chain, 3))
    write_artefact(
        job.output["samples"], PATHS_SAMPLES, s.datasets(acc_chain),
        p, seeds={"seed": p["seed"], "realisation": p["realisation"], "width": N,
                  "experiment_tag": tag},
        attrs={"experiment": experiment, "width": N, "accuracy": acc, "rhat": s.rhat,
               "ess": s.ess, "warmup_seconds": s.warmup_seconds,
               "sampling_seconds": s.sampling_seconds, "chains": "vectorised",
               "variables": scfg["variables"], "paths": attrs["paths"],
               "display": attrs["display"], "sampler": "numpyro NUTS"},
    )

