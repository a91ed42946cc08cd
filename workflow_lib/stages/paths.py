"""Stages of the attention-paths study (spec ``attention_paths.md``): path-attended inputs of the
hidden-Markov-chain task, the order parameter U(N) with the GP lines, posterior samples, tables
and figures (Fig. 2c-e of the paper)."""

from __future__ import annotations

import json
import logging
import time
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from workflow_lib.analysis import paths_figures
from workflow_lib.artefacts import read_artefact, write_artefact
from workflow_lib.keys import stage_key
from workflow_lib.paths import model, sampling, tables, tasks, theory
from workflow_lib.stages import Job
from workflow_lib.stages.figures import save_figure, write_csv

log = logging.getLogger("workflow_lib.paths")

FEATURES = "paths-features/1"
THEORY = "paths-theory/1"
SAMPLES = "paths-samples/1"


def _task(p: dict, experiment: str) -> tasks.MarkovTask:
    cfg = p["paths"]
    return tasks.MarkovTask(
        tokens=cfg["tokens"],
        features=cfg["features"],
        p_plus=cfg["p_stay_plus"],
        p_minus=cfg["p_stay_minus"],
        in_plane=cfg["noise_in_plane"],
        sigma_perp=cfg["sigma_perp"][experiment],
        beta=cfg["attention_beta"],
        perturbation=cfg["random_head_perturbation"],
    )


def _networks(experiment: str) -> dict[str, tuple[tuple[str, ...], ...]]:
    """``all`` (the experiment's network) and its GP-line sub-networks."""
    ex = tasks.EXPERIMENTS[experiment]
    return {"all": ex.network, **ex.gp_lines}


def _heads(network: tuple[tuple[str, ...], ...]) -> tuple[int, ...]:
    return tuple(len(layer) for layer in network)


def paths_features(job: Job) -> None:
    """Data, heads and path-attended inputs of one experiment and realisation.

    The key ``stage_key(seed, 'paths_features', r)`` splits into training data, test data and
    random heads; it does not depend on the experiment, so both experiments see the same chains,
    noise draws and heads (only σ⊥ differs). Datasets: ``y_train: (P,)``, ``y_test: (Pt,)``,
    ``heads/{name}: (N0, N0)``, ``phi_train/{net}: (P, N0, Pi)``, ``phi_test/{net}: (Pt, N0, Pi)``
    for ``net`` in ``all`` and the GP-line sub-networks.
    """
    p, cfg, experiment = job.params, job.params["paths"], job.params["experiment"]
    task = _task(p, experiment)
    k_train, k_test, k_heads = jax.random.split(
        stage_key(p["seed"], "paths_features", p["realisation"]), 3
    )
    start = time.perf_counter()
    x_train, y_train = tasks.dataset(k_train, cfg["n_train"], task)
    x_test, y_test = tasks.dataset(k_test, cfg["n_test"], task)
    heads = tasks.heads(k_heads, task)
    data = {
        "y_train": y_train,
        "y_test": y_test,
        **{f"heads/{name}": W for name, W in heads.items()},
    }
    networks = _networks(experiment)
    used = sorted({h for layers in networks.values() for layer in layers for h in layer})
    for split, x in (("train", x_train), ("test", x_test)):
        maps = {h: model.attention_maps(x, heads[h][None]) for h in used}  # (B, 1, T, T)
        for net, layers in networks.items():
            omegas = [jnp.concatenate([maps[h] for h in layer], axis=1) for layer in layers]
            data[f"phi_{split}/{net}"] = model.path_features(
                x, omegas, task.readout(), cfg["prior_variance"]
            )
    n_seq = x_train.shape[0] + x_test.shape[0]
    seconds = time.perf_counter() - start
    log.info(
        "%s r%d: %d sequences x %d heads, %d networks in %.1f s (%.0f sequences/s)",
        experiment,
        p["realisation"],
        n_seq,
        len(used),
        len(networks),
        seconds,
        n_seq / seconds,
    )
    write_artefact(
        job.output["features"],
        FEATURES,
        data,
        p,
        seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={
            "experiment": experiment,
            "networks": json.dumps(networks),
            "paths": json.dumps(tasks.EXPERIMENTS[experiment].paths),
            "display": json.dumps(tasks.EXPERIMENTS[experiment].display),
            "sigma_perp": task.sigma_perp,
            "N0": task.width,
            "readout": "last token",
            "key_split": "stage_key(seed, 'paths_features', r) -> train, test, heads",
        },
    )


def _read_features(path: str) -> tuple[dict, dict]:
    art = read_artefact(path, FEATURES, required=("y_train", "y_test", "phi_train/all"))
    return art.data, art.attrs


def paths_theory(job: Job) -> None:
    """Minimum of the action for every width, GP lines and kernel-PC overlaps.

    Datasets: ``widths: (n,)``; ``accuracy``, ``ua``, ``action``, ``grad_max``,
    ``hessian_min``, ``iterations``, ``seconds``: ``(n,)``; ``U/1: (n, Pi, Pi)``,
    ``U/2: (n, H2, H2)`` (the hierarchy); ``gp_accuracy: (n_nets,)`` in the order of attr
    ``gp_networks``; ``pc_overlaps/fw``, ``pc_overlaps/gp``: ``(n_pcs,)`` (FW at the smallest
    width).
    """
    p, cfg = job.params, job.params["paths"]
    data, attrs = _read_features(job.input["features"])
    networks = json.loads(attrs["networks"])
    heads, T, s2 = _heads(networks["all"]), cfg["temperature"], cfg["prior_variance"]
    phi, y, phi_test, y_test = (
        jnp.asarray(data[k]) for k in ("phi_train/all", "y_train", "phi_test/all", "y_test")
    )
    widths = sorted(cfg["widths"])
    sols = []
    for i, N in enumerate(widths):
        sol = theory.minimise_action(
            phi, y, heads, N, T, s2, cfg["solver"]["max_iter"], cfg["solver"]["gtol"]
        )
        sols.append(sol)
        log.info(
            "N=%d (%d/%d): %d L-BFGS steps, %.1f s, max|grad| %.1e, min Hessian eig %.2e",
            N,
            i + 1,
            len(widths),
            sol.iterations,
            sol.seconds,
            sol.grad_max,
            sol.hessian_min,
        )
        if sol.grad_max > 1e-6 or sol.hessian_min <= 0:
            log.warning(
                "N=%d: not a clean minimum (max|grad| %.1e, min Hessian eig %.2e)",
                N,
                sol.grad_max,
                sol.hessian_min,
            )
    acc = [
        theory.accuracy(theory.predictor(phi, y, phi_test, jnp.asarray(s.Us[0]), T)[0], y_test)
        for s in sols
    ]
    gp_acc = []
    for net, layers in networks.items():
        U = theory.gp_order_parameters(_heads(layers), s2)[0]
        mean, _ = theory.predictor(
            jnp.asarray(data[f"phi_train/{net}"]), y, jnp.asarray(data[f"phi_test/{net}"]), U, T
        )
        gp_acc.append(theory.accuracy(mean, y_test))
    log.info(
        "accuracy: FW %s; GP %s",
        dict(zip(widths, np.round(acc, 3), strict=True)),
        dict(zip(networks, np.round(gp_acc, 3), strict=True)),
    )
    n_pcs = min(cfg["n_pcs"], phi.shape[0])
    gp_U = theory.gp_order_parameters(heads, s2)[0]
    field = lambda name: np.array([getattr(s, name) for s in sols])  # noqa: E731
    write_artefact(
        job.output["theory"],
        THEORY,
        {
            "widths": np.array(widths),
            "accuracy": np.array(acc),
            "ua": field("ua"),
            "action": field("action"),
            "grad_max": field("grad_max"),
            "hessian_min": field("hessian_min"),
            "iterations": field("iterations"),
            "seconds": field("seconds"),
            "gp_accuracy": np.array(gp_acc),
            **{
                f"U/{layer + 1}": np.stack([s.Us[layer] for s in sols])
                for layer in range(len(heads))
            },
            "pc_overlaps/fw": theory.pc_overlaps(phi, y, jnp.asarray(sols[0].Us[0]), n_pcs),
            "pc_overlaps/gp": theory.pc_overlaps(phi, y, gp_U, n_pcs),
        },
        p,
        seeds={"seed": p["seed"], "realisation": p["realisation"]},
        attrs={
            "experiment": attrs["experiment"],
            "gp_networks": json.dumps(list(networks)),
            "paths": attrs["paths"],
            "display": attrs["display"],
            "pc_width": widths[0],
            "temperature": T,
            "solver": "L-BFGS-B on Cholesky factors from the GP point",
        },
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
    data, attrs = _read_features(job.input["features"])
    heads = _heads(json.loads(attrs["networks"])["all"])
    phi, y, phi_test, y_test = (
        jnp.asarray(data[k]) for k in ("phi_train/all", "y_train", "phi_test/all", "y_test")
    )
    tag = zlib.crc32(experiment.encode()) & 0x7FFFFFFF
    key = jax.random.fold_in(
        jax.random.fold_in(stage_key(p["seed"], "paths_sample", p["realisation"]), tag), N
    )
    s = sampling.run_nuts(
        key,
        phi,
        y,
        heads,
        N,
        cfg["temperature"],
        cfg["prior_variance"],
        integrate_v0=scfg["integrate_v0"],
        warmup=scfg["warmup"],
        samples=scfg["samples"],
        chains=scfg["chains"],
        target_accept=scfg["target_accept"],
        max_tree_depth=scfg["max_tree_depth"],
    )
    acc_chain = [theory.accuracy(model.readout(phi_test, W), y_test) for W in s.mean_weights]
    acc = theory.accuracy(model.readout(phi_test, s.mean_weights.mean(axis=0)), y_test)
    log.info("N=%d: sampled accuracy %.3f (chains %s)", N, acc, np.round(acc_chain, 3))
    *us, ua = s.order_parameters
    write_artefact(
        job.output["samples"],
        SAMPLES,
        {
            **{f"U/{layer + 1}": u for layer, u in enumerate(us)},
            "ua": ua[..., 0, 0],
            "mean_weights": s.mean_weights,
            "accuracy_per_chain": np.array(acc_chain),
            "accept": s.accept,
            "divergences": s.divergences,
            "mean_steps": s.mean_steps,
        },
        p,
        seeds={
            "seed": p["seed"],
            "realisation": p["realisation"],
            "width": N,
            "experiment_tag": tag,
        },
        attrs={
            "experiment": experiment,
            "width": N,
            "accuracy": acc,
            "rhat": s.rhat,
            "ess": s.ess,
            "warmup_seconds": s.warmup_seconds,
            "sampling_seconds": s.sampling_seconds,
            "chains": "vectorised",
            "integrate_v0": scfg["integrate_v0"],
            "paths": attrs["paths"],
            "display": attrs["display"],
            "sampler": "numpyro NUTS",
        },
    )


def paths_tables(job: Job) -> None:
    """Tidy CSV tables of every theory and samples artefact (see ``paths.tables``)."""
    theories = [read_artefact(f, THEORY) for f in job.input["theory"]]
    samples = [read_artefact(f, SAMPLES) for f in job.input.get("samples", [])]
    for name, df in tables.build(theories, samples).items():
        write_csv(df, job.output[name])


def paths_figure(job: Job) -> None:
    """Draw panel ``params['panel']`` (paths_fig2c, paths_fig2d or paths_fig2e) from the tables;
    PNG and PDF."""
    panel = job.params["panel"]
    read = lambda name: pd.read_csv(job.input[name])  # noqa: E731
    if panel in ("paths_fig2c", "paths_fig2e"):
        experiment = "four_paths" if panel == "paths_fig2c" else "two_paths"
        fig = paths_figures.accuracy_and_order_parameter(
            read("accuracy"), read("order_parameters"), experiment, panel[-1]
        )
    elif panel == "paths_fig2d":
        fig = paths_figures.pc_overlaps(read("pc_overlaps"))
    else:
        raise ValueError(f"unknown figure panel {panel!r}")
    save_figure(fig, job.output)
