"""Tidy tables across realisations and sweep points (pandas).

Every table has one row per run x epoch or per run x sweep point; ``summarise`` reduces a table
to mean, standard error of the mean and count per group.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from workflow_lib.core.artefacts import read_artefact
from workflow_lib.mlm.architectures import FIG2B
from workflow_lib.potts.artefact import POTTS_SAMPLES
from workflow_lib.studies.potts_paper.artefacts import (
    MLM_TRAIN,
    PLM_FIT,
    REPLICA_SIMULATIONS,
    REPLICA_THEORY,
    SAMPLE_COMPLEXITY,
)

TRAIN_FINAL = ("train_loss", "test_loss", "test_loss_heldout", "optimal_loss_heldout",
               "test_overlap", "recon_error", "pearson_r", "adam_train_loss", "adam_test_loss",
               "adam_test_loss_heldout", "adam_recon_error", "adam_pearson_r", "rel_improvement",
               "grad_norm", "steps_per_second", "wall_seconds")
PLM_FINAL = ("train_loss", "test_loss", "test_loss_heldout", "optimal_loss_heldout",
             "test_overlap", "recon_error", "pearson_r", "iterations", "grad_norm", "grad_tol",
             "wall_seconds")
MOSTLY_IN_SAMPLE = 0.5  # warn when more than this fraction of the test set is in the training set
FLOOR_TOLERANCE = 0.01  # warn when a factored fit ends more than this above the data set's floor
STOP_COLUMNS = ("stop_epoch", "best_epoch", "epoch_cap")  # runs with a stop window; else NaN
SAMPLE_COMPLEXITY_COLUMNS = ("M", "test_loss", "test_loss_heldout", "train_loss", "pearson_r",
                             "converged", "train_accuracy", "train_errors", "forced_errors",
                             "separable", "l2_effective")  # fmt: skip


def _realisation(attrs: dict) -> int:
    return int(json.loads(attrs["seeds"])["realisation"])


def training_tables(paths: Iterable[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(history, final, restarts)`` of ``MLM_TRAIN`` artefacts.

    history: arch, model, a, realisation, epoch, train_loss, test_loss, test_loss_heldout,
    recon_error, pearson_r, optimal_loss, pairs_seen (the supervised (sequence, site) pairs
    trained on by the end of the epoch: epoch x the run's ``supervised_per_epoch``). final: one
    row per run with the final metrics (``TRAIN_FINAL``; ``adam_*``: the Adam solution before
    any polish, with a stop window at its lowest held-out loss), ``polished`` (an L-BFGS polish
    followed Adam: ``training.polish_max_iter``), ``converged`` (the training stage's criterion:
    ``convergence_criterion``), ``stop_epoch``, ``best_epoch`` and ``epoch_cap`` (``STOP_COLUMNS``,
    runs with a stop window; NaN otherwise), ``supervised_per_epoch``, ``excess_loss`` =
    test_loss / optimal_loss - 1 and
    ``test_overlap`` (fraction of the test sequences that occur in the training set;
    ``test_loss_heldout`` and ``optimal_loss_heldout`` average only the others). restarts: one
    row per run and restart (arch, model, a, realisation, optimal_loss, restart, train_loss,
    test_loss).
    """
    history, final, restarts = [], [], []
    for path in paths:
        art = read_artefact(path, MLM_TRAIN, required=("history/epoch", "restarts/train_loss",
                                                       "restarts/test_loss"))
        ident = {"arch": art.attrs["arch"], "model": art.attrs["model"],
                 "a": float(art.attrs["a"]), "realisation": _realisation(art.attrs),
                 "optimal_loss": float(art.attrs["optimal_loss"])}
        h = {k.split("/", 1)[1]: v for k, v in art.data.items() if k.startswith("history/")}
        per_epoch = int(art.attrs["supervised_per_epoch"])
        history.append(pd.DataFrame({**ident, **h}).assign(pairs_seen=h["epoch"] * per_epoch))
        final.append({**ident, **{k: float(art.attrs[k]) for k in TRAIN_FINAL},
                      **{k: float(art.attrs.get(k, np.nan)) for k in STOP_COLUMNS},
                      "supervised_per_epoch": per_epoch,
                      "convergence_criterion": str(art.attrs["convergence_criterion"]),
                      "converged": bool(art.attrs["converged"]),
                      "polished": "polish_iterations" in art.attrs})
        losses = {k: art[f"restarts/{k}"] for k in ("train_loss", "test_loss")}
        restarts.append(pd.DataFrame({**ident, "restart": np.arange(len(losses["test_loss"])),
                                      **losses}))
    final_df = pd.DataFrame(final)
    final_df["excess_loss"] = final_df["test_loss"] / final_df["optimal_loss"] - 1
    return (pd.concat(history, ignore_index=True), final_df,
            pd.concat(restarts, ignore_index=True))


def restarts_at_floor(restarts: pd.DataFrame) -> pd.DataFrame:
    """Per run (arch, realisation): ``restarts`` and ``restarts_at_floor``, the number whose test
    loss ends within ``FLOOR_TOLERANCE`` of the data set's floor (``restarts`` after
    ``with_floor``; NaN without a floor): how often a random start reaches that minimum."""
    at_floor = (restarts["excess_over_floor"] <= FLOOR_TOLERANCE).astype(float).where(
        restarts["floor_loss"].notna())
    g = restarts.assign(at_floor=at_floor).groupby(["arch", "realisation"])["at_floor"]
    return pd.DataFrame({"restarts": g.size(), "restarts_at_floor": g.sum(min_count=1)}
                        ).reset_index()


def interpolation_curve(final: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2d's runs, rows of ``final`` (``training_tables``): the interpolated layer's at
    every level a > 0 and, as its a = 0, the factored fit (the layer at a = 0 is factored
    attention, eq. 2: ``architectures.interpolation_runs``); empty without an interpolated run
    at a > 0."""
    interp = final[(final["model"] == "interpolated") & (final["a"] > 0)]
    if not len(interp):
        return interp
    return pd.concat([final[final["arch"] == "factored"].assign(a=0.0), interp],
                     ignore_index=True)


def plm_table(paths: Iterable[str]) -> pd.DataFrame:
    """One row per ``plm-fit/2`` artefact: kind, realisation, losses, reconstruction, cost
    (``PLM_FINAL``), ``converged`` (max |gradient| <= grad_tol), the optimiser's stop reason and
    ``exact_map_error`` (the truth-started fit: its start against the Potts conditional, eqs.
    4-5; NaN for the other kinds)."""
    rows = []
    for path in paths:
        art = read_artefact(path, PLM_FIT)
        rows.append({"kind": art.attrs["kind"], "realisation": _realisation(art.attrs),
                     "optimal_loss": float(art.attrs["optimal_loss"]),
                     **{k: float(art.attrs[k]) for k in PLM_FINAL},
                     "converged": bool(art.attrs["converged"]),
                     "stop_reason": str(art.attrs["stop_reason"]),
                     "exact_map_error": float(art.attrs.get("exact_map_error", np.nan))})
    df = pd.DataFrame(rows)
    df["excess_loss"] = df["test_loss"] / df["optimal_loss"] - 1
    return df


def with_floor(df: pd.DataFrame, plm: pd.DataFrame) -> pd.DataFrame:
    """``df`` (one row per run, or per run and epoch, with ``realisation`` and ``test_loss``) plus
    ``floor_loss``, the test loss of the realisation's ``factored_from_truth`` fit (the data
    set's own floor; NaN without that fit), and ``excess_over_floor`` = test_loss / floor_loss -
    1."""
    floor = plm[plm["kind"] == "factored_from_truth"].set_index("realisation")["test_loss"]
    df = df.assign(floor_loss=df["realisation"].map(floor).astype(float))
    return df.assign(excess_over_floor=df["test_loss"] / df["floor_loss"] - 1)


def replica_table(theory_path: str, simulations_path: str) -> pd.DataFrame:
    """Theory curves and simulation points: lambda, alpha, source (theory | simulation), M,
    eps (theory, or simulation mean), sem, n, z (simulations: (mean - theory at the same
    M) / sem), train_eps (simulations: the fits' mean training error), p (the regression's
    inputs: the interpolation threshold is M = p) and sigma2 (the label noise: the error's floor
    as alpha grows)."""
    th = read_artefact(theory_path, REPLICA_THEORY, required=("alpha", "eps_saddle"))
    sim = read_artefact(simulations_path, REPLICA_SIMULATIONS,
                        required=("mean", "sem", "z", "train_mean"))
    rows = []
    for k, lam in enumerate(th["lambdas"]):
        rows.append(pd.DataFrame({"lambda": lam, "alpha": th["alpha"], "source": "theory",
                                  "M": np.nan, "eps": th["eps_saddle"][k], "sem": np.nan,
                                  "n": np.nan, "z": np.nan, "train_eps": np.nan}))
    n = sim["errors"].shape[-1]
    for k, lam in enumerate(sim["lambdas"]):
        rows.append(pd.DataFrame({"lambda": lam, "alpha": sim["alpha"], "source": "simulation",
                                  "M": sim["M"], "eps": sim["mean"][k], "sem": sim["sem"][k],
                                  "n": n, "z": sim["z"][k], "train_eps": sim["train_mean"][k]}))
    return pd.concat(rows, ignore_index=True).assign(sigma2=float(th.attrs["sigma2"]),
                                                     p=float(sim.attrs["L"]) - 1)


def sample_complexity_table(paths: Iterable[str]) -> pd.DataFrame:
    """One row per realisation x M: realisation, M, alpha = M/L, L, C, test_loss,
    test_loss_heldout (the test sequences absent from the whole training set, the same at every
    M), train_loss, pearson_r, converged (L-BFGS gradient criterion), optimal_loss and
    optimal_loss_heldout (on the same two sets), test_overlap (of the full training set),
    train_accuracy and train_errors (the training (sequence, site) pairs the fit predicts, and
    the number it does not), forced_errors (those the data's conflicts force wrong), separable
    (train_errors == forced_errors), penalty and l2_effective (``sample_complexity.penalty``)."""
    frames = []
    for path in paths:
        art = read_artefact(path, SAMPLE_COMPLEXITY, required=SAMPLE_COMPLEXITY_COLUMNS)
        L = float(art.attrs["L"])
        frames.append(pd.DataFrame({
            "realisation": _realisation(art.attrs), "M": art["M"], "alpha": art["M"] / L,
            "L": L, "C": float(art.attrs["C"]),
            **{k: art[k] for k in ("test_loss", "test_loss_heldout", "train_loss", "pearson_r")},
            "converged": art["converged"].astype(bool),
            **{k: float(art.attrs[k]) for k in ("optimal_loss", "optimal_loss_heldout",
                                                "test_overlap")},
            **{k: art[k] for k in ("train_accuracy", "train_errors", "forced_errors",
                                   "separable", "l2_effective")},
            "penalty": str(art.attrs["penalty"]),
        }))
    return pd.concat(frames, ignore_index=True)


def capacity_edge(curve: pd.DataFrame) -> pd.DataFrame:
    """Per realisation of the ``sample_complexity`` table, where its fits stop separating their
    training data as far as the data allow (``separable``: training errors equal to the errors
    the data's conflicts force), from training data alone: ``edge_M``, the last grid point of
    the run of separable fits that starts at the smallest M, and ``threshold_M``, the grid point
    after it (NaN when every fit separates); ``before_M`` and ``after_M``, the grid points before
    ``edge_M`` and after ``threshold_M`` (NaN past an end); ``edge_alpha`` = edge_M / L;
    ``M_min``, ``M_max``: the grid's ends. Every realisation has a row."""
    rows = []
    for r, g in curve.sort_values("M").groupby("realisation"):
        M = g["M"].to_numpy(float)
        ok = g["separable"].astype(bool).to_numpy()
        k = len(M) - 1 if ok.all() else int(np.argmin(ok)) - 1  # last separable before a miss
        at = [float(x) for x in M] + [np.nan, np.nan]  # at[-1], at[len(M)]: past an end
        L = float(g["L"].iloc[0])
        rows.append({"realisation": r, "L": L, "M_min": M[0], "M_max": M[-1],
                     "edge_M": at[k], "edge_alpha": at[k] / L, "threshold_M": at[k + 1],
                     "before_M": at[k - 1] if k >= 1 else np.nan, "after_M": at[k + 2]})
    return pd.DataFrame(rows)


def warnings(final: pd.DataFrame, plm: pd.DataFrame, curve: pd.DataFrame) -> list[str]:
    """One line per problem the tables carry: test sets mostly in the training set (more than
    ``MOSTLY_IN_SAMPLE``), unconverged training runs, PLM fits and sample-complexity points,
    and factored fits whose test loss exceeds the data set's floor (``with_floor``) by more than
    ``FLOOR_TOLERANCE``: a minimum the floor fit shows to be beatable on the same data."""
    lines = []
    overlap = final.groupby("realisation")["test_overlap"].first()
    for r, frac in overlap[overlap > MOSTLY_IN_SAMPLE].items():
        lines.append(f"realisation {r}: {100 * frac:.0f} % of the test sequences occur in the "
                     "training set; the test loss is mostly in-sample (see test_loss_heldout)")
    for _, row in final[~final["converged"]].iterrows():
        lines.append(f"train {row['arch']} r{row['realisation']}: NOT CONVERGED (relative "
                     f"improvement {row['rel_improvement']:.1e}, max |gradient| "
                     f"{row['grad_norm']:.1e})")
    for _, row in plm[~plm["converged"]].iterrows():
        lines.append(f"plm {row['kind']} r{row['realisation']}: NOT CONVERGED (max |gradient| "
                     f"{row['grad_norm']:.1e} > {row['grad_tol']:.0e}; {row['stop_reason']})")
    short = pd.concat([final[final["model"] == "factored"].assign(name="train " + final["arch"]),
                       plm[plm["kind"] == "factored"].assign(name="plm factored")])
    if "excess_over_floor" in short:
        for _, row in short[short["excess_over_floor"] > FLOOR_TOLERANCE].iterrows():
            lines.append(f"{row['name']} r{row['realisation']}: test loss "
                         f"{100 * row['excess_over_floor']:.1f} % above the data set's floor "
                         "(plm factored_from_truth)")
    bad = curve[~curve["converged"]]
    for r, rows in bad.groupby("realisation"):
        lines.append(f"sample complexity r{r}: NOT CONVERGED at M = {rows['M'].tolist()}")
    return lines


def summarise(df: pd.DataFrame, by: Sequence[str], values: Sequence[str]) -> pd.DataFrame:
    """Tidy summary: one row per group x quantity with mean, sem (ddof 1; NaN for n = 1), n."""
    long = df.melt(id_vars=list(by), value_vars=list(values), var_name="quantity")
    long["value"] = long["value"].astype(float)  # flags (converged) summarise as fractions
    grouped = long.groupby([*by, "quantity"], dropna=False)["value"]
    out = grouped.agg(mean="mean", std="std", n="count").reset_index()
    out["sem"] = out["std"] / np.sqrt(out["n"])
    return out.drop(columns="std")


def attention_maps_table(paths: Iterable[str]) -> pd.DataFrame:
    """The attention maps of the ``MLM_TRAIN`` artefacts of Fig. 2b's architectures
    (``FIG2B``), one row per realisation, arch and off-diagonal entry: realisation, arch, i, j,
    value (the map as the artefact holds it: factored attention after its scale fit to J, a
    transformer's masked-token softmax map averaged over the test sequences) and J (the
    realisation's couplings J_ij)."""
    frames = []
    for path in paths:
        art = read_artefact(path, MLM_TRAIN, required=("attention", "J"))
        if str(art.attrs["arch"]) not in FIG2B:
            continue
        att, J = art["attention"], art["J"]
        i, j = np.nonzero(~np.eye(len(J), dtype=bool))
        frames.append(pd.DataFrame({"realisation": _realisation(art.attrs),
                                    "arch": str(art.attrs["arch"]), "i": i, "j": j,
                                    "value": att[i, j], "J": J[i, j]}))
    columns = ["realisation", "arch", "i", "j", "value", "J"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def attention_maps(maps: pd.DataFrame, realisation: int) -> tuple[np.ndarray,
                                                                  dict[str, np.ndarray]]:
    """``(J: (L, L), {arch: attention map (L, L)})`` of one realisation of the
    ``attention_maps`` table (``attention_maps_table``; diagonals 0), the maps in Fig. 2b's
    order."""
    rows = maps[maps["realisation"] == realisation]
    L = int(max(rows["i"].max(), rows["j"].max())) + 1

    def square(values: pd.Series, at: pd.DataFrame) -> np.ndarray:
        m = np.zeros((L, L))
        m[at["i"].to_numpy(), at["j"].to_numpy()] = values.to_numpy()
        return m

    first = rows[rows["arch"] == rows["arch"].iloc[0]]
    by_arch = {a: square(g["value"], g) for a, g in rows.groupby("arch")}
    return square(first["J"], first), {a: by_arch[a] for a in FIG2B if a in by_arch}


def data_table(paths: Iterable[str]) -> pd.DataFrame:
    """One row per realisation's data set: beta, mean_hamming (normalised, between the data
    set's sequences), target_hamming and tolerance (the protocol; NaN for a fixed beta),
    n_train, n_test, L, C, distinct_train, distinct_fraction (distinct training sequences /
    n_train) and test_in_train (fraction of the test sequences that occur in the training
    set)."""
    rows = []
    for path in paths:
        art = read_artefact(path, POTTS_SAMPLES, required=("train", "test"))
        n = int(art["train"].shape[0])
        rows.append({"realisation": _realisation(art.attrs), "beta": float(art.attrs["beta"]),
                     "mean_hamming": float(art.attrs["mean_hamming"]),
                     "target_hamming": float(art.attrs.get("target_hamming", np.nan)),
                     "tolerance": float(art.attrs.get("tolerance", np.nan)), "n_train": n,
                     "n_test": int(art["test"].shape[0]),
                     "L": int(art["train"].shape[1]),
                     "C": int(json.loads(art.attrs["config"])["potts"]["C"]),
                     "distinct_train": int(art.attrs["n_distinct_train"]),
                     "distinct_fraction": int(art.attrs["n_distinct_train"]) / n,
                     "test_in_train": float(art.attrs["test_in_train_fraction"])})
    return pd.DataFrame(rows)


def build_tables(samples: Iterable[str], train: Iterable[str], plm: Iterable[str],
                 sample_complexity: Iterable[str], theory: str,
                 simulations: str) -> dict[str, pd.DataFrame]:
    """The Potts paper's per-realisation tables (``attention_maps`` among them) and its
    ``replica`` table, by name, from the artefact paths of each stage (its summaries:
    ``training_summary``, ``sample_complexity_summary``)."""
    history, final, restarts = training_tables(train)
    plm_fits = plm_table(plm)
    history, restarts = with_floor(history, plm_fits), with_floor(restarts, plm_fits)
    final = with_floor(final, plm_fits).merge(restarts_at_floor(restarts), how="left",
                                              on=["arch", "realisation"])
    plm_fits = with_floor(plm_fits, plm_fits)
    sc = sample_complexity_table(sample_complexity)
    return {
        "data": data_table(samples),
        "attention_maps": attention_maps_table(train),
        "training_history": history,
        "training_final": final,
        "training_restarts": restarts,
        "plm": plm_fits,
        "replica": replica_table(theory, simulations),
        "sample_complexity": sc,
        "sample_complexity_threshold": capacity_edge(sc),
    }


def training_summary(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """``summarise`` of the ``training_final`` table per architecture (and a) over
    realisations."""
    return summarise(tables["training_final"], ["arch", "a"],
                     ["test_loss", "test_loss_heldout", "excess_loss", "excess_over_floor",
                      "test_overlap", "recon_error", "pearson_r", "converged"])


def sample_complexity_summary(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """``summarise`` of the ``sample_complexity`` table per M over realisations."""
    return summarise(tables["sample_complexity"], ["M", "alpha"],
                     ["test_loss", "test_loss_heldout", "train_loss", "converged",
                      "train_accuracy", "separable"])
