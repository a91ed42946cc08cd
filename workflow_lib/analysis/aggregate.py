"""Tidy tables across realisations and sweep points (pandas).

Every table has one row per run x epoch or per run x sweep point; ``summarise`` reduces a table
to mean, standard error of the mean and count per group.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from workflow_lib.architectures import FIG2B
from workflow_lib.artefacts import (
    MLM_TRAIN,
    PLM_FIT,
    REPLICA_SIMULATIONS,
    REPLICA_THEORY,
    SAMPLE_COMPLEXITY,
    read_artefact,
)

TRAIN_FINAL = ("train_loss", "test_loss", "recon_error", "pearson_r", "steps_per_second",
               "wall_seconds")


def _realisation(attrs: dict) -> int:
    import json

    return int(json.loads(attrs["seeds"])["realisation"])


def training_tables(paths: Iterable[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(history, final)`` of ``mlm-train/1`` artefacts.

    history: arch, model, a, realisation, epoch, train_loss, test_loss, recon_error, pearson_r,
    optimal_loss. final: one row per run with the final metrics and ``excess_loss`` =
    test_loss / optimal_loss - 1.
    """
    history, final = [], []
    for path in paths:
        art = read_artefact(path, MLM_TRAIN, required=("history/epoch",))
        ident = {"arch": art.attrs["arch"], "model": art.attrs["model"],
                 "a": float(art.attrs["a"]), "realisation": _realisation(art.attrs),
                 "optimal_loss": float(art.attrs["optimal_loss"])}
        h = {k.split("/", 1)[1]: v for k, v in art.data.items() if k.startswith("history/")}
        history.append(pd.DataFrame({**ident, **h}))
        final.append({**ident, **{k: float(art.attrs[k]) for k in TRAIN_FINAL}})
    final_df = pd.DataFrame(final)
    final_df["excess_loss"] = final_df["test_loss"] / final_df["optimal_loss"] - 1
    return pd.concat(history, ignore_index=True), final_df


def plm_table(paths: Iterable[str]) -> pd.DataFrame:
    """One row per ``plm-fit/1`` artefact: kind, realisation, losses, reconstruction, cost."""
    rows = []
    for path in paths:
        art = read_artefact(path, PLM_FIT)
        rows.append({"kind": art.attrs["kind"], "realisation": _realisation(art.attrs),
                     "optimal_loss": float(art.attrs["optimal_loss"]),
                     **{k: float(art.attrs[k]) for k in
                        ("train_loss", "test_loss", "recon_error", "pearson_r", "iterations",
                         "wall_seconds")}})
    df = pd.DataFrame(rows)
    df["excess_loss"] = df["test_loss"] / df["optimal_loss"] - 1
    return df


def replica_table(theory_path: str, simulations_path: str) -> pd.DataFrame:
    """Theory curves and simulation points: lambda, alpha, source (theory | simulation), M,
    eps (theory, or simulation mean), sem, n and z (simulations: (mean - theory at the same
    M) / sem)."""
    th = read_artefact(theory_path, REPLICA_THEORY, required=("alpha", "eps_saddle"))
    sim = read_artefact(simulations_path, REPLICA_SIMULATIONS, required=("mean", "sem", "z"))
    rows = []
    for k, lam in enumerate(th["lambdas"]):
        rows.append(pd.DataFrame({"lambda": lam, "alpha": th["alpha"], "source": "theory",
                                  "M": np.nan, "eps": th["eps_saddle"][k], "sem": np.nan,
                                  "n": np.nan, "z": np.nan}))
    n = sim["errors"].shape[-1]
    for k, lam in enumerate(sim["lambdas"]):
        rows.append(pd.DataFrame({"lambda": lam, "alpha": sim["alpha"], "source": "simulation",
                                  "M": sim["M"], "eps": sim["mean"][k], "sem": sim["sem"][k],
                                  "n": n, "z": sim["z"][k]}))
    df = pd.concat(rows, ignore_index=True)
    df.attrs.update(L=int(th.attrs["L"]), sigma2=float(th.attrs["sigma2"]))
    return df


def sample_complexity_table(paths: Iterable[str]) -> pd.DataFrame:
    """One row per realisation x M: realisation, M, alpha = M/L, test_loss, train_loss,
    pearson_r, optimal_loss."""
    frames = []
    for path in paths:
        art = read_artefact(path, SAMPLE_COMPLEXITY, required=("M", "test_loss"))
        frames.append(pd.DataFrame({
            "realisation": _realisation(art.attrs), "M": art["M"],
            "alpha": art["M"] / float(art.attrs["L"]), "test_loss": art["test_loss"],
            "train_loss": art["train_loss"], "pearson_r": art["pearson_r"],
            "optimal_loss": float(art.attrs["optimal_loss"]),
        }))
    return pd.concat(frames, ignore_index=True)


def peak(df: pd.DataFrame, x: str, y: str) -> pd.Series:
    """The interpolation peak of the group mean of ``y`` over ``x``: the largest mean after the
    curve's first local minimum (the global maximum if it never rises). Returns ``x``, ``y``, n.

    At the smallest sizes the fit barely leaves its small initialisation, so the loss starts
    near the uniform guess ``log C``; the peak that matters is the rise after the first descent.
    """
    g = df.groupby(x)[y]
    means = g.mean().sort_index()
    rises = np.flatnonzero(np.diff(means.to_numpy()) > 0)
    tail = means.iloc[rises[0]:] if rises.size else means
    at = tail.idxmax()
    return pd.Series({x: at, y: means[at], "n": int(g.count()[at])})


def summarise(df: pd.DataFrame, by: Sequence[str], values: Sequence[str]) -> pd.DataFrame:
    """Tidy summary: one row per group x quantity with mean, sem (ddof 1; NaN for n = 1), n."""
    long = df.melt(id_vars=list(by), value_vars=list(values), var_name="quantity")
    grouped = long.groupby([*by, "quantity"], dropna=False)["value"]
    out = grouped.agg(mean="mean", std="std", n="count").reset_index()
    out["sem"] = out["std"] / np.sqrt(out["n"])
    return out.drop(columns="std")


def attention_maps(paths: Iterable[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(J: (L, L), {arch: attention map (L, L)})`` of ``mlm-train/1`` artefacts of one
    realisation, the maps in Fig. 2b's order."""
    maps, J = {}, None
    for path in paths:
        art = read_artefact(path, MLM_TRAIN, required=("attention", "J"))
        maps[str(art.attrs["arch"])] = art["attention"]
        J = art["J"]
    return J, {a: maps[a] for a in FIG2B if a in maps}


def build_tables(train: Iterable[str], plm: Iterable[str], sample_complexity: Iterable[str],
                 theory: str, simulations: str) -> dict[str, pd.DataFrame]:
    """Every table of the Potts paper, by name, from the artefact paths of each stage."""
    history, final = training_tables(train)
    sc = sample_complexity_table(sample_complexity)
    sc_peak = peak(sc, "M", "test_loss").to_frame().T
    sc_peak["alpha"] = sc_peak["M"] / sc["M"].iloc[0] * sc["alpha"].iloc[0]
    return {
        "training_history": history,
        "training_final": final,
        "training_summary": summarise(final, ["arch", "a"],
                                      ["test_loss", "excess_loss", "recon_error", "pearson_r"]),
        "plm": plm_table(plm),
        "replica": replica_table(theory, simulations),
        "sample_complexity": sc,
        "sample_complexity_summary": summarise(sc, ["M", "alpha"], ["test_loss", "train_loss"]),
        "sample_complexity_peak": sc_peak,
    }
