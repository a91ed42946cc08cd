"""The attention-paths paper's claims on the hidden-Markov-chain task (Tiberi et al. 2024,
Fig. 2c-e), measured on the study's tables with ``workflow_lib.claims``: values are means over
realisations (paired per realisation) with their standard error."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib import claims as c

STUDY = "attention_hmm"
SAMPLES_TOLERANCE = 0.02  # samples "on the theory": within 2 accuracy points
FIGURE = {"four_paths": "Fig. 2c", "two_paths": "Fig. 2e"}


def _accuracy(acc: pd.DataFrame, experiment: str, method: str, N: float | None = None,
              network: str = "all") -> pd.Series:
    rows = acc[(acc["experiment"] == experiment) & (acc["method"] == method)
               & (acc["network"] == network)]
    if N is not None:
        rows = rows[np.isclose(rows["N"], N)]
    return rows.set_index("realisation")["accuracy"]


def _paired(a: pd.Series, b: pd.Series) -> c.Measure:
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    return c.mean_sem(both.iloc[:, 0] - both.iloc[:, 1])


def accuracy_claims(acc: pd.DataFrame) -> list[dict]:
    """Per experiment: the finite-width theory above the GP limit at the smallest width, and the
    posterior samples on the theory at every sampled width."""
    rows = []
    for experiment in acc["experiment"].unique():
        theory = acc[(acc["experiment"] == experiment) & (acc["method"] == "theory")]
        if not len(theory):
            continue
        N = float(theory["N"].min())
        m = _paired(_accuracy(acc, experiment, "theory", N), _accuracy(acc, experiment, "gp"))
        rows.append(c.row(
            f"{experiment}.theory_above_gp", STUDY, FIGURE.get(experiment, experiment),
            "At small width the finite-width theory generalises better than the GP limit",
            "", m, f"paired accuracy theory (N = {N:g}) - GP of all paths > 0",
            c.above(m, 0.0)))
        samples = acc[(acc["experiment"] == experiment) & (acc["method"] == "samples")]
        for width in sorted(samples["N"].unique()):
            m = _paired(_accuracy(acc, experiment, "samples", width),
                        _accuracy(acc, experiment, "theory", width))
            rows.append(c.row(
                f"{experiment}.samples_on_theory_N{width:g}", STUDY,
                FIGURE.get(experiment, experiment), "Posterior samples of the network agree "
                "with the theory", "", m, f"paired accuracy samples - theory at N = {width:g} "
                f"within +-{SAMPLES_TOLERANCE}", c.within(m, SAMPLES_TOLERANCE)))
    return rows


def path_claims(ops: pd.DataFrame) -> list[dict]:
    """Fig. 2c, the order parameter U at the smallest width (four paths g, d, a1, a2): the
    denoising path enters with a negative cross weight to the good path, and the adversarial
    paths are suppressed below their GP weight 1."""
    theory = ops[(ops["experiment"] == "four_paths") & (ops["method"] == "theory")]
    if not len(theory):
        return []
    small = theory[np.isclose(theory["N"], theory["N"].min())]

    def entry(row: str, col: str) -> pd.Series:
        e = small[(small["row"] == row) & (small["col"] == col)]
        return e.set_index("realisation")["value"]

    N = float(small["N"].iloc[0])
    m = c.mean_sem(entry("g", "d"))
    rows = [c.row("four_paths.denoising", STUDY, "Fig. 2c", "The network combines the good "
                  "path with the denoising path, subtracting it (negative cross weight)", "",
                  m, f"U_gd (theory, N = {N:g}) < 0", c.below(m, 0.0))]
    adversarial = pd.concat([entry("a1", "a1"), entry("a2", "a2")], axis=1).max(axis=1)
    m = c.mean_sem(adversarial)
    rows.append(c.row("four_paths.adversarial_suppressed", STUDY, "Fig. 2c", "The adversarial "
                      "paths are suppressed below their GP weight", "1", m,
                      f"max(U_a1a1, U_a2a2) (theory, N = {N:g}) < 1", c.below(m, 1.0)))
    return rows


def hmm_claims(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``)."""
    return c.table([*accuracy_claims(tables["accuracy"]),
                    *path_claims(tables["order_parameters"])])
