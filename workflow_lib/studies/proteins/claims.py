"""The protein claim that motivates the Potts paper, measured on the study's tables with
``workflow_lib.claims``: on protein families a single layer of factored attention "performed as
well as a deep transformer, and significantly better than a single layer of vanilla
self-attention" (Bhattacharya et al. 2020, quoted by Rende et al. 2024, Sec. I), in contact
precision at L (P@L) and in held-out masked-token loss. The units are (family, held-out split)
pairs; factored attention is represented by its number of heads (and attention form) with the
lowest mean held-out loss per family, a pick among candidates that widens its intervals
(Bonferroni)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib import claims as c

STUDY = "proteins"
SOURCE = "Bhattacharya et al. 2020"
PRECISION_TOLERANCE = 0.05  # "as well as": P@L at most 5 points below
LOSS_TOLERANCE = 0.02  # "as well as": held-out loss at most 0.02 nats per site above
REFERENCE_TOLERANCE = 0.1
# plmDCA's P@L (|i - j| >= 6, 8 Å) on the full Pfam alignments, read from AttentionDCA's result
# files: a sanity range for a family of that name, not a claim of the papers (docs/proteins.md).
# The quick preset's PF00014_2000, a subsample, has no entry.
PLMDCA_REFERENCE = {"PF00014": 1.00, "PF13354": 0.97, "PF00677": 0.91, "PF00684": 0.74}


def best_factored(models: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Per family, the rows of the factored run (``factored*``) with the lowest mean held-out
    loss, renamed ``factored``; and the number of candidates it was picked from."""
    factored = models[models["model"].str.startswith("factored")]
    if not len(factored):
        return factored, 0
    means = factored.groupby(["family", "model"])["heldout_loss"].mean()
    best = means.groupby(level="family").idxmin().tolist()
    picked = factored.set_index(["family", "model"]).loc[best].reset_index()
    return picked.assign(model="factored"), int(factored.groupby("family")["model"].nunique().max())


def _paired(models: pd.DataFrame, a: str, b: str, column: str, tests: int) -> c.Measure:
    """Mean and s.e.m. over (family, split) units of ``column`` of model ``a`` minus ``b``."""
    wide = models.pivot_table(index=["family", "realisation"], columns="model", values=column)
    if a not in wide or b not in wide:
        return c.Measure(np.nan, np.nan, 0)
    m = c.mean_sem((wide[a] - wide[b]).dropna())
    return c.Measure(m.value, m.error, m.n, tests)


def claims_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``)."""
    models = tables["models"]
    best, tests = best_factored(models)
    both = pd.concat([best, models[~models["model"].str.startswith("factored")]])
    present = set(both["model"])
    has_precision = "P@L" in both and both["P@L"].notna().any()
    rows = []

    def compare(other: str, name: str, statement: str, precision: tuple[str, float] | None,
                loss: tuple[str, float] | None) -> None:  # fmt: skip
        if not {"factored", other} <= present:
            return
        if precision and has_precision:
            kind, bound = precision
            m = _paired(both, "factored", other, "P@L", tests)
            verdict = c.above(m, bound)
            rows.append(c.row(f"proteins.{name}.precision", STUDY, SOURCE, statement, "",
                              m, f"paired P@L factored (best) - {other} > {bound:g} ({kind})",
                              verdict))
        if loss:
            kind, bound = loss
            m = _paired(both, "factored", other, "heldout_loss", tests)
            rows.append(c.row(f"proteins.{name}.heldout_loss", STUDY, SOURCE, statement, "", m,
                              f"paired held-out loss factored (best) - {other} < {bound:g} "
                              f"nats per site ({kind})", c.below(m, bound)))

    compare("vanilla1", "factored_beats_vanilla1", "A single layer of factored attention is "
            "significantly better than a single layer of vanilla self-attention",
            ("better", 0.0), ("better", 0.0))
    compare("vanilla3", "factored_as_vanilla3", "A single layer of factored attention performs "
            "as well as a deep (3-layer) transformer", ("as well", -PRECISION_TOLERANCE),
            ("as well", LOSS_TOLERANCE))
    compare("plmdca", "factored_as_plmdca", "Masked language modelling with factored attention "
            "is pseudo-likelihood inference: its contacts are plmDCA's",
            ("as well", -PRECISION_TOLERANCE), None)
    if has_precision and "plmdca" in present:
        for family, ref in PLMDCA_REFERENCE.items():
            values = models[(models["model"] == "plmdca") & (models["family"] == family)]["P@L"]
            if len(values):
                m = c.mean_sem(values - ref)
                rows.append(c.row(
                    f"proteins.plmdca_reference.{family}", STUDY, "AttentionDCA result files",
                    "plmDCA reaches the precision the field reports on this family (sanity "
                    "check)", f"{ref:g}", m,
                    f"P@L plmdca - reference within +-{REFERENCE_TOLERANCE:g}",
                    c.within(m, REFERENCE_TOLERANCE)))
    return c.table(rows)
