"""Tidy tables of the one-shot Omniglot study (the paper's Fig. 3b-f) from its artefacts; the
claims table is computed from them (``omniglot.claims``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from workflow_lib.attention import icl, model
from workflow_lib.attention.heads import path_labels
from workflow_lib.core.artefacts import Artefact


def sem(accuracy: float, n: int) -> float:
    """Standard error of an accuracy measured on ``n`` independent episodes."""
    return float(np.sqrt(accuracy * (1 - accuracy) / n))


def accuracy(model_art: Artefact, th: Artefact, samples: Artefact | None) -> pd.DataFrame:
    """Accuracy by (method, N, T): the theory grid, the GP, the gradient-descent model and the
    samples, with the validation-selected T flagged and the test accuracy's s.e.m."""
    widths, temps, n_test = th["widths"], th["temperatures"], int(th.attrs["n_test"])
    rows = [{"method": "theory", "N": float(N), "T": float(temps[j]),
             "selected": bool(j == th["selected"][i]),
             "validation": th["accuracy/validation"][i, j], "test": th["accuracy/test"][i, j]}
            for i, N in enumerate(widths) for j in range(len(temps))]
    rows += [{"method": "gp", "N": np.inf, "T": float(T), "selected": bool(j == th["gp_selected"]),
              "validation": th["gp/validation"][j], "test": th["gp/test"][j]}
             for j, T in enumerate(temps)]
    rows.append({"method": "gradient descent", "N": float(model_art.attrs["width"]), "T": np.nan,
                 "selected": True, "validation": model_art.attrs["accuracy_validation"],
                 "test": model_art.attrs["accuracy_test"]})
    if samples is not None:
        rows.append({"method": "samples", "N": float(samples.attrs["width"]),
                     "T": float(samples.attrs["temperature"]), "selected": True,
                     "validation": np.nan, "test": samples.attrs["accuracy"]})
    df = pd.DataFrame(rows)
    return df.assign(test_sem=[sem(a, n_test) for a in df["test"]], n_test=n_test)


def order_parameters(th: Artefact, samples: Artefact | None,
                     params: icl.Params, net: icl.Net) -> pd.DataFrame:
    """U of the first layer (source, row, col, value): the theory and the samples at the scoring
    width, and the overlaps ū^π·ū^π' of the gradient-descent model's effective weights."""
    heads = tuple(json.loads(th.attrs["heads"]))
    score_width = int(th.attrs["score_width"])
    i_s = list(th["widths"]).index(score_width)
    mats = {f"theory N={score_width}": th["U/1"][i_s, th["selected"][i_s]]}
    if samples is not None:
        mats[f"samples N={samples.attrs['width']}"] = samples["U/1"].mean(axis=(0, 1))
    a, values, _ = icl.theory_weights(params, net)
    ubar = model.suffix_vectors(a, values)[0]
    mats["gradient descent"] = np.asarray(ubar @ ubar.T)
    labels = path_labels(len(heads), heads[0])
    return pd.DataFrame([{"source": src, "row": labels[r], "col": labels[c],
                          "value": float(U[r, c])}
                         for src, U in mats.items() for r, c in np.ndindex(*U.shape)])


def episodes(th: Artefact, samples: Artefact | None) -> pd.DataFrame:
    """Per test episode (episode, method, N, T, correct): whether the mean predictor gets it
    right, for the theory at every N and the GP (each at its validation-selected T) and the
    posterior samples; all on the same test episodes."""
    widths, temps = th["widths"], th["temperatures"]
    runs = [("theory", float(N), float(temps[th["selected"][i]]),
             th["correct/test"][i, th["selected"][i]]) for i, N in enumerate(widths)]
    runs.append(("gp", np.inf, float(temps[th["gp_selected"]]),
                 th["gp/correct/test"][th["gp_selected"]]))
    if samples is not None:
        runs.append(("samples", float(samples.attrs["width"]),
                     float(samples.attrs["temperature"]), samples["correct/test"]))
    return pd.concat([pd.DataFrame({"episode": np.arange(len(right)), "method": method, "N": N,
                                    "T": T, "correct": np.asarray(right, int)})
                      for method, N, T, right in runs], ignore_index=True)


def pc_overlaps(th: Artefact) -> pd.DataFrame:
    return pd.DataFrame([{"regime": regime, "rank": k + 1, "overlap": float(v)}
                         for regime in ("fw", "gp")
                         for k, v in enumerate(th[f"pc_overlaps/{regime}"])])


def head_scores(pruning: Artefact) -> pd.DataFrame:
    """Per head: score, test accuracy with it removed, and the drop from the unpruned model."""
    full = float(pruning.attrs["accuracy"])
    return pd.DataFrame([{"layer": layer + 1, "head": h + 1,
                          "score": float(pruning["head_scores"][layer, h]),
                          "accuracy": float(pruning["single"][layer, h]),
                          "drop": full - float(pruning["single"][layer, h])}
                         for layer, h in np.ndindex(*pruning["head_scores"].shape)])


def cumulative_pruning(pruning: Artefact) -> pd.DataFrame:
    """Accuracy after k removals (order, replicate, removed, accuracy, last): by ascending and
    descending score (replicate 0), and for each random order (replicate 0 .. R - 1)."""
    rows = []
    for order in ("ascending", "descending"):
        names = [""] + [f"({layer + 1}){h + 1}" for layer, h in pruning[f"removed/{order}"]]
        rows += [{"order": order, "replicate": 0, "removed": k, "accuracy": float(acc),
                  "last": name}
                 for k, (acc, name) in enumerate(zip(pruning[f"cumulative/{order}"], names,
                                                     strict=True))]
    rows += [{"order": "random", "replicate": r, "removed": k, "accuracy": float(acc), "last": ""}
             for r, curve in enumerate(pruning["cumulative/random"])  # (R, k + 1)
             for k, acc in enumerate(curve)]
    return pd.DataFrame(rows)


def tables(model_art: Artefact, th: Artefact, samples: Artefact | None, pruning: Artefact,
           params: icl.Params, net: icl.Net) -> dict[str, pd.DataFrame]:
    """Every table of the study (its registry) from the model, theory, samples (or None) and
    pruning artefacts; ``params``, ``net``: the model's."""
    return {"accuracy": accuracy(model_art, th, samples), "episodes": episodes(th, samples),
            "order_parameters": order_parameters(th, samples, params, net),
            "pc_overlaps": pc_overlaps(th), "head_scores": head_scores(pruning),
            "cumulative_pruning": cumulative_pruning(pruning)}
