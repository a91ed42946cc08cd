"""Stages of the one-shot Omniglot study (spec ``attention_paths.md`` §4b, the paper's Fig. 3):
images and episodes, the gradient-descent model, path-attended inputs of its frozen heads, the
theory over (N, T) with the temperature chosen on validation episodes, the GP, posterior samples,
head scores and pruning, tables and figures."""

from __future__ import annotations

import json
import logging
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from workflow_lib.analysis import omniglot_figures
from workflow_lib.analysis.save import save_figure
from workflow_lib.artefacts import Artefact, read_artefact, write_artefact, write_csv
from workflow_lib.keys import stage_key
from workflow_lib.paths import heads as head_scores
from workflow_lib.paths import icl, model, omniglot, sampling, theory
from workflow_lib.stages import Job

log = logging.getLogger("workflow_lib.paths")

DATA = "omniglot-data/1"
MODEL = "omniglot-model/1"
FEATURES = "omniglot-features/1"
THEORY = "omniglot-theory/1"
SAMPLES = "omniglot-samples/1"
PRUNING = "omniglot-pruning/1"
SPLITS = ("train", "validation", "test")


def _seeds(p: dict) -> dict:
    return {"seed": p["seed"]}


def _key(p: dict, stage: str) -> jax.Array:
    return stage_key(p["seed"], stage, 0)


# ------------------------------------------------------------------ data


def omniglot_data(job: Job) -> None:
    """Preprocessed images of the training, validation and test characters, the frozen
    embeddings and the fixed episodes of the theory.

    Training characters: all of ``train_archive``; the characters of ``test_archive`` are split
    at random into validation (``validation_fraction``) and test characters. Datasets per split:
    ``tokens/{split}: (n, n_patches, N0)``, ``character/{split}: (n,)``,
    ``episodes/{split}/{images, context_labels, y}``; ``embeddings/{position, label}``.
    """
    p, cfg = job.params, job.params["omniglot"]
    start = time.perf_counter()
    train, train_names = omniglot.load_bank(job.input["train_archive"], cfg["image_size"],
                                            cfg["patch"])
    held, held_names = omniglot.load_bank(job.input["test_archive"], cfg["image_size"],
                                          cfg["patch"])
    k_split, k_emb, *k_episodes = jax.random.split(_key(p, "omniglot_data"), 5)
    order = np.asarray(jax.random.permutation(k_split, held.n_characters))
    n_val = max(1, round(cfg["validation_fraction"] * held.n_characters))
    if held.n_characters - n_val < 2 or n_val < 2:
        raise ValueError(
            f"{job.input['test_archive']}: {held.n_characters} characters cannot be split into "
            f"validation and test sets of at least 2 (omniglot.validation_fraction)"
        )
    banks = {"train": train, "validation": held.subset(order[:n_val]),
             "test": held.subset(order[n_val:])}
    names = {"train": train_names, "validation": [held_names[i] for i in np.sort(order[:n_val])],
             "test": [held_names[i] for i in np.sort(order[n_val:])]}
    n_patches, width = train.tokens.shape[1:]
    emb = omniglot.embeddings(k_emb, n_patches, width, cfg["positional_scale"],
                              cfg["label_scale"])
    data = {"embeddings/position": emb.position, "embeddings/label": emb.label}
    for split, key in zip(SPLITS, k_episodes, strict=False):
        bank = banks[split]
        ep = omniglot.draw_episodes(key, bank, cfg[f"n_{split}"])
        data |= {f"tokens/{split}": bank.tokens, f"character/{split}": bank.character,
                 f"episodes/{split}/images": ep.images,
                 f"episodes/{split}/context_labels": ep.context_labels,
                 f"episodes/{split}/y": ep.y}
        log.info("%s: %d characters, %d images, %d episodes", split, bank.n_characters,
                 len(bank.character), len(ep.y))
    log.info("images and episodes in %.1f s", time.perf_counter() - start)
    write_artefact(
        job.output["data"], DATA, data, p, seeds=_seeds(p),
        attrs={
            "characters": json.dumps(names),
            "tokens": 3 * n_patches,
            "N0": width,
            "episode": "2-way 1-shot in context: context, context, query; labels 0/1 at random; "
                       "y = 2 label(query) - 1; balanced (first half y = +1)",
            "preprocessing": f"bilinear resize to {cfg['image_size']}, (x - {omniglot.MEAN}) / "
                             f"{omniglot.STD}, grey x3, {cfg['patch']}x{cfg['patch']} patches, "
                             "LayerNorm without affine parameters",
            "key_split": "stage_key(seed, 'omniglot_data', 0) -> character split, embeddings, "
                         "train, validation, test episodes",
        },
    )


class Episodes:
    """The data artefact in memory: ``inputs(split)`` gives the fixed episodes' ``x0: (n, T, N0)``
    and ``y: (n,)``."""

    def __init__(self, path: str):
        self.art = read_artefact(path, DATA, required=("embeddings/label", "tokens/train"))
        self.emb = omniglot.Embeddings(self.art["embeddings/position"],
                                       self.art["embeddings/label"])

    def bank(self, split: str) -> omniglot.Bank:
        return omniglot.Bank(self.art[f"tokens/{split}"], self.art[f"character/{split}"])

    def inputs(self, split: str) -> tuple[jax.Array, jax.Array]:
        ep = f"episodes/{split}"
        x0 = omniglot.sequences(jnp.asarray(self.art[f"tokens/{split}"]), self.emb,
                                self.art[f"{ep}/images"], self.art[f"{ep}/context_labels"])
        return x0, jnp.asarray(self.art[f"{ep}/y"])


# ------------------------------------------------------------------ gradient descent


def _net(cfg: dict, n0: int) -> icl.Net:
    net = cfg["network"]
    return icl.Net(net["width"], net["head_dim"], net["layers"], net["heads"], n0)


def _model(art: Artefact) -> tuple[icl.Params, icl.Net]:
    """The parameters and sizes held by a model artefact."""
    params = {k.removeprefix("params/"): jnp.asarray(v) for k, v in art.data.items()
              if k.startswith("params/")}
    return params, icl.Net(*(int(art.attrs[k]) for k in icl.Net._fields))


def _read_model(path: str) -> Artefact:
    return read_artefact(path, MODEL, required=("params/a", "params/V0"))


def omniglot_train(job: Job) -> None:
    """Train the gradient-descent model on fresh episodes of the training characters.

    Datasets: ``params/{V0, Q1, K1, V1, ...}`` (PyTorch convention, see ``paths.icl``),
    ``attention/{l}: (H_l, N0, N0)`` = Kᵀ Q / sqrt(G), ``history: (n_blocks,)`` training loss;
    attrs: validation and test accuracy on the fixed episodes.
    """
    p, cfg = job.params, job.params["omniglot"]
    data = Episodes(job.input["data"])
    bank = data.bank("train")
    net = _net(cfg, bank.tokens.shape[-1])
    t = cfg["training"]
    plan = icl.Training(t["steps"], t["batch"], t["learning_rate"], t["weight_decay"],
                        min(t["log_every"], t["steps"]))
    start = time.perf_counter()
    params, history = icl.train(_key(p, "omniglot_train"), net, plan, jnp.asarray(bank.tokens),
                                jnp.asarray(bank.starts), data.emb)
    seconds = time.perf_counter() - start
    acc = {split: icl.accuracy(params, net, *data.inputs(split)) for split in SPLITS}
    log.info("gradient descent: %.0f s; accuracy %s", seconds,
             {k: round(v, 3) for k, v in acc.items()})
    write_artefact(
        job.output["model"], MODEL,
        {**{f"params/{k}": v for k, v in params.items()}, "history": history,
         **{f"attention/{layer + 1}": W
            for layer, W in enumerate(icl.attention_logits_weights(params, net))}},
        p, seeds=_seeds(p),
        attrs={**net._asdict(), **{f"accuracy_{k}": v for k, v in acc.items()},
               "train_seconds": seconds, "optimizer": "adam + L2 weight decay, constant rate",
               "loss": "square loss on y = +-1, fresh episodes each step"},
    )


# ------------------------------------------------------------------ theory


def omniglot_features(job: Job) -> None:
    """Path-attended inputs ``phi/{split}: (n, N0, Pi)`` (float64, mean-pooling readout) of the
    fixed episodes under the trained model's frozen heads, and ``y/{split}``."""
    p, cfg = job.params, job.params["omniglot"]
    data = Episodes(job.input["data"])
    art = read_artefact(job.input["model"], MODEL, required=("attention/1",))
    heads = [int(art.attrs["heads"])] * int(art.attrs["layers"])
    Ws = [jnp.asarray(art[f"attention/{layer + 1}"], jnp.float64) for layer in range(len(heads))]
    out, start = {}, time.perf_counter()
    for split in SPLITS:
        x0, y = data.inputs(split)
        x = jnp.swapaxes(x0, 1, 2).astype(jnp.float64)  # (n, N0, T)
        omegas = [model.attention_maps(x, W) for W in Ws]
        readout = jnp.full(x.shape[-1], 1.0 / x.shape[-1])
        out[f"phi/{split}"] = model.path_features(x, omegas, readout, cfg["prior_variance"])
        out[f"y/{split}"] = y
    log.info("path-attended inputs of %d episodes in %.1f s",
             sum(len(out[f"y/{s}"]) for s in SPLITS), time.perf_counter() - start)
    write_artefact(job.output["features"], FEATURES, out, p, seeds=_seeds(p),
                   attrs={"heads": json.dumps(heads), "readout": "mean pooling",
                          "paths": "h1-major"})


def _read_features(path: str) -> tuple[dict[str, jax.Array], tuple[int, ...]]:
    art = read_artefact(path, FEATURES, required=[f"phi/{s}" for s in SPLITS])
    return {k: jnp.asarray(v) for k, v in art.data.items()}, tuple(json.loads(art.attrs["heads"]))


def select(validation: np.ndarray) -> int:
    """Index of the best validation accuracy (the lowest temperature among ties)."""
    return int(np.argmax(validation))


def omniglot_theory(job: Job) -> None:
    """The finite-width theory for every (N, T), the GP for every T, the temperatures chosen on
    the validation episodes, PC overlaps and head scores.

    Datasets: ``widths: (nN,)``, ``temperatures: (nT,)``, ``accuracy/{validation,test}:
    (nN, nT)``, ``selected: (nN,)`` (index into temperatures), ``U/{l}: (nN, nT, m, m)``,
    ``grad_max``, ``iterations``: ``(nN, nT)``; ``gp/{validation,test}: (nT,)``,
    ``gp_selected``; ``pc_overlaps/{fw,gp}: (n_pcs,)``; ``head_scores: (L, H)``.
    """
    p, cfg = job.params, job.params["omniglot"]
    f, heads = _read_features(job.input["features"])
    s2, widths, temps = cfg["prior_variance"], sorted(cfg["widths"]), sorted(cfg["temperatures"])
    phi, y = f["phi/train"], f["y/train"]

    held_out = jnp.concatenate([f["phi/validation"], f["phi/test"]])  # one predictor call
    n_val = f["y/validation"].shape[0]

    def accuracies(U: jax.Array, T: float) -> list[float]:
        mean = theory.predictor(phi, y, held_out, U, T)[0]
        return [theory.accuracy(mean[:n_val], f["y/validation"]),
                theory.accuracy(mean[n_val:], f["y/test"])]

    gp_U = theory.gp_order_parameters(heads, s2)[0]
    gp = np.array([accuracies(gp_U, T) for T in temps])  # (nT, 2)
    gp_sel = select(gp[:, 0])
    log.info("GP: validation %s -> T = %g, test %.3f", np.round(gp[:, 0], 3), temps[gp_sel],
             gp[gp_sel, 1])
    acc = np.zeros((len(widths), len(temps), 2))
    Us = [np.zeros((len(widths), len(temps), m, m)) for m in theory.sizes(heads)]
    grad_max, iterations = np.zeros(acc.shape[:2]), np.zeros(acc.shape[:2], np.int64)
    start = time.perf_counter()
    for i, N in enumerate(widths):
        for j, T in enumerate(temps):
            sol = theory.minimise_action(phi, y, heads, N, T, s2, cfg["solver"]["max_iter"],
                                         cfg["solver"]["gtol"], hessian=False)
            for layer, U in enumerate(sol.Us):
                Us[layer][i, j] = U
            grad_max[i, j], iterations[i, j] = sol.grad_max, sol.iterations
            acc[i, j] = accuracies(jnp.asarray(sol.Us[0]), T)
        done = (i + 1) / len(widths)
        elapsed = time.perf_counter() - start
        log.info("N=%d: validation %s, test %s; %.0f s elapsed, ETA %.0f s", N,
                 np.round(acc[i, :, 0], 3), np.round(acc[i, :, 1], 3), elapsed,
                 elapsed * (1 - done) / done)
    selected = np.array([select(acc[i, :, 0]) for i in range(len(widths))])
    score_width = cfg["sample_width"] if cfg["sample_width"] in widths else widths[0]
    i_s = widths.index(score_width)
    U_score = Us[0][i_s, selected[i_s]]
    n_pcs = min(cfg["n_pcs"], phi.shape[0])
    write_artefact(
        job.output["theory"], THEORY,
        {"widths": np.array(widths), "temperatures": np.array(temps),
         "accuracy/validation": acc[..., 0], "accuracy/test": acc[..., 1],
         "selected": selected, "grad_max": grad_max, "iterations": iterations,
         **{f"U/{layer + 1}": U for layer, U in enumerate(Us)},
         "gp/validation": gp[:, 0], "gp/test": gp[:, 1], "gp_selected": gp_sel,
         "pc_overlaps/fw": theory.pc_overlaps(phi, y, jnp.asarray(U_score), n_pcs),
         "pc_overlaps/gp": theory.pc_overlaps(phi, y, gp_U, n_pcs),
         "head_scores": head_scores.scores(U_score, len(heads), heads[0])},
        p, seeds=_seeds(p),
        attrs={"heads": json.dumps(heads), "score_width": score_width,
               "score_temperature": temps[selected[i_s]],
               "temperature_selection": "best validation accuracy per N (lowest T among ties); "
                                        "the test set never enters the choice",
               "solver": "L-BFGS-B on Cholesky factors from the GP point"},
    )


# ------------------------------------------------------------------ samples


def omniglot_sample(job: Job) -> None:
    """NUTS posterior samples at ``sample_width`` and the temperature the theory selected there.

    Every weight is sampled (V0 included): with Π = 16 paths and P training episodes the
    integrated form's Π² P² path kernels would not pay off. Datasets as ``paths_sample``:
    ``U/{l}: (C, S, m, m)``, ``mean_weights: (C, Pi, N0)``, per chain ``accept``,
    ``divergences``, ``mean_steps``, ``accuracy_per_chain``; attrs ``accuracy``, ``rhat``,
    ``ess``, ``temperature``.
    """
    p, cfg, scfg = job.params, job.params["omniglot"], job.params["omniglot"]["sampler"]
    f, heads = _read_features(job.input["features"])
    th = read_artefact(job.input["theory"], THEORY, required=("selected", "widths"))
    N = cfg["sample_width"]
    widths = list(th["widths"])
    T = float(th["temperatures"][th["selected"][widths.index(N)]])
    s = sampling.run_nuts(
        _key(p, "omniglot_sample"), f["phi/train"], f["y/train"], heads, N, T,
        cfg["prior_variance"], integrate_v0=False, warmup=scfg["warmup"],
        samples=scfg["samples"], chains=scfg["chains"], target_accept=scfg["target_accept"],
        max_tree_depth=scfg["max_tree_depth"],
    )
    phi_test, y_test = f["phi/test"], f["y/test"]
    per_chain = [theory.accuracy(model.readout(phi_test, W), y_test) for W in s.mean_weights]
    acc = theory.accuracy(model.readout(phi_test, s.mean_weights.mean(axis=0)), y_test)
    log.info("N=%d, T=%g: sampled test accuracy %.3f (chains %s)", N, T, acc,
             np.round(per_chain, 3))
    *us, ua = s.order_parameters
    write_artefact(
        job.output["samples"], SAMPLES,
        {**{f"U/{layer + 1}": u for layer, u in enumerate(us)}, "ua": ua[..., 0, 0],
         "mean_weights": s.mean_weights, "accuracy_per_chain": np.array(per_chain),
         "accept": s.accept, "divergences": s.divergences, "mean_steps": s.mean_steps},
        p, seeds=_seeds(p),
        attrs={"width": N, "temperature": T, "accuracy": acc, "rhat": s.rhat, "ess": s.ess,
               "warmup_seconds": s.warmup_seconds, "sampling_seconds": s.sampling_seconds,
               "sampler": "numpyro NUTS, every weight sampled"},
    )


# ------------------------------------------------------------------ pruning


def omniglot_prune(job: Job) -> None:
    """Head scores from the theory's U and pruning of the gradient-descent model.

    Datasets: ``head_scores: (L, H)`` (normalised by their maximum), ``single: (L, H)`` test
    accuracy with that one head removed, ``cumulative/{ascending,descending}: (k,)`` accuracy
    after removing the k lowest (highest) scoring heads, k = 0, 1, ..., skipping a layer's last
    head, with the removed heads ``cumulative/order_{...}: (k, 2)`` (layer, head); attr
    ``accuracy``: the unpruned model.
    """
    p = job.params
    params, net = _model(_read_model(job.input["model"]))
    x0, y = Episodes(job.input["data"]).inputs("test")
    th = read_artefact(job.input["theory"], THEORY, required=("head_scores",))
    scores = th["head_scores"]
    full = icl.accuracy(params, net, x0, y)
    single = np.zeros(scores.shape)
    for layer, h in np.ndindex(*scores.shape):
        keep = head_scores.keep_mask(net.layers, net.heads, [(layer, h)])
        single[layer, h] = icl.accuracy(params, net, x0, y, keep)
    out = {"head_scores": scores, "single": single}
    for name, order in head_scores.pruning_orders(scores).items():
        removable = head_scores.removal_sequence(order, net.layers, net.heads)
        out[f"cumulative/order_{name}"] = np.array(removable).reshape(-1, 2)
        out[f"cumulative/{name}"] = np.array([
            icl.accuracy(params, net, x0, y,
                         head_scores.keep_mask(net.layers, net.heads, removable[:k]))
            for k in range(len(removable) + 1)
        ])
    log.info("unpruned %.3f; single-head pruning (rows: layers) %s", full,
             np.round(single, 3).tolist())
    write_artefact(
        job.output["pruning"], PRUNING, out, p, seeds=_seeds(p),
        attrs={"accuracy": full, "score_width": int(th.attrs["score_width"]),
               "score_temperature": float(th.attrs["score_temperature"]),
               "pruning": "head removed; the remaining heads of its layer summed with "
                          "1/sqrt(#left)"},
    )


# ------------------------------------------------------------------ tables and figures


def _tables(model_art: Artefact, th: Artefact, samples: Artefact | None,
            pruning: Artefact) -> dict[str, pd.DataFrame]:
    """Tidy tables: accuracy (method, N, T, split), order parameters (source, row, col),
    PC overlaps, head scores with single-head pruning, cumulative pruning."""
    heads = tuple(json.loads(th.attrs["heads"]))
    widths, temps = th["widths"], th["temperatures"]
    acc = [{"method": "theory", "N": float(N), "T": float(temps[j]),
            "selected": bool(j == th["selected"][i]), "validation": th["accuracy/validation"][i, j],
            "test": th["accuracy/test"][i, j]}
           for i, N in enumerate(widths) for j in range(len(temps))]
    acc += [{"method": "gp", "N": np.inf, "T": float(T), "selected": bool(j == th["gp_selected"]),
             "validation": th["gp/validation"][j], "test": th["gp/test"][j]}
            for j, T in enumerate(temps)]
    acc.append({"method": "gradient descent", "N": float(model_art.attrs["width"]), "T": np.nan,
                "selected": True, "validation": model_art.attrs["accuracy_validation"],
                "test": model_art.attrs["accuracy_test"]})
    score_width = int(th.attrs["score_width"])
    i_s = list(widths).index(score_width)
    mats = {f"theory N={score_width}": th["U/1"][i_s, th["selected"][i_s]]}
    if samples is not None:
        acc.append({"method": "samples", "N": float(samples.attrs["width"]),
                    "T": float(samples.attrs["temperature"]), "selected": True,
                    "validation": np.nan, "test": samples.attrs["accuracy"]})
        mats[f"samples N={samples.attrs['width']}"] = samples["U/1"].mean(axis=(0, 1))
    params, net = _model(model_art)
    a, values, _ = icl.theory_weights(params, net)
    ubar = model.suffix_vectors(a, values)[0]
    mats["gradient descent"] = np.asarray(ubar @ ubar.T)
    labels = head_scores.path_labels(len(heads), heads[0])
    ops = [{"source": src, "row": labels[r], "col": labels[c], "value": float(U[r, c])}
           for src, U in mats.items() for r, c in np.ndindex(*U.shape)]
    pcs = [{"regime": regime, "rank": k + 1, "overlap": float(v)}
           for regime in ("fw", "gp") for k, v in enumerate(th[f"pc_overlaps/{regime}"])]
    full = float(pruning.attrs["accuracy"])
    scores = [{"layer": layer + 1, "head": h + 1, "score": float(pruning["head_scores"][layer, h]),
               "accuracy": float(pruning["single"][layer, h]),
               "drop": full - float(pruning["single"][layer, h])}
              for layer, h in np.ndindex(*pruning["head_scores"].shape)]
    cumulative = []
    for order in ("ascending", "descending"):
        removed = pruning[f"cumulative/order_{order}"]
        names = [""] + [f"({layer + 1}){h + 1}" for layer, h in removed]
        cumulative += [{"order": order, "removed": k, "accuracy": float(accuracy), "last": name}
                       for k, (accuracy, name) in enumerate(zip(pruning[f"cumulative/{order}"],
                                                                names, strict=True))]
    return {"accuracy": pd.DataFrame(acc), "order_parameters": pd.DataFrame(ops),
            "pc_overlaps": pd.DataFrame(pcs), "head_scores": pd.DataFrame(scores),
            "cumulative_pruning": pd.DataFrame(cumulative)}


def omniglot_tables(job: Job) -> None:
    """CSV tables of the Omniglot study (``_tables``)."""
    samples = job.input.get("samples") or []
    tables = _tables(
        _read_model(job.input["model"]), read_artefact(job.input["theory"], THEORY),
        read_artefact(samples[0], SAMPLES) if samples else None,
        read_artefact(job.input["pruning"], PRUNING),
    )
    for name, df in tables.items():
        write_csv(df, job.output[name])


def omniglot_figure(job: Job) -> None:
    """Draw panel ``params['panel']`` (omniglot_fig3b ... omniglot_fig3f); PNG and PDF."""
    panel = job.params["panel"]
    read = lambda name: pd.read_csv(job.input[name])  # noqa: E731
    draw = {
        "omniglot_fig3b": lambda: omniglot_figures.accuracy(read("accuracy")),
        "omniglot_fig3c": lambda: omniglot_figures.order_parameters(read("order_parameters")),
        "omniglot_fig3d": lambda: omniglot_figures.pc_overlaps(read("pc_overlaps")),
        "omniglot_fig3e": lambda: omniglot_figures.head_scores(read("head_scores")),
        "omniglot_fig3f": lambda: omniglot_figures.cumulative_pruning(read("cumulative_pruning")),
    }
    if panel not in draw:
        raise ValueError(f"unknown figure panel {panel!r}")
    save_figure(draw[panel](), job.output)
