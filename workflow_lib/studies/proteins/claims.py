"""The protein claim that motivates the Potts paper, measured on the study's tables with
``workflow_lib.claims``: on protein families a single layer of factored attention "performed as
well as a deep transformer, and significantly better than a single layer of vanilla
self-attention" (Bhattacharya et al. 2020, quoted by Rende et al. 2024, Sec. I), in contact
precision at L (P@L) and in held-out masked-token loss. The units are families: each model's
held-out loss and P@L are averaged over the family's held-out splits first (the splits share
most sequences), then paired per family; factored attention is represented by its number of
heads (and attention form) with the lowest mean held-out loss per family, a pick among
candidates that widens its intervals (Bonferroni). Each precision row states the contact
definition and the random-ranking precision beside it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib import claims as c

STUDY = "proteins"
SOURCE = "Bhattacharya et al. 2020"
PRECISION_TOLERANCE = 0.05  # "as well as": P@L at most 5 points below
LOSS_TOLERANCE = 0.02  # "as well as": held-out loss at most 0.02 nats per site above
REFERENCE_TOLERANCE = 0.1
# plmDCA's P@L (|i - j| >= 6, 8 Å) read from AttentionDCA's result files, keyed by the sha256 of
# the alignment file it was measured on, as published (ArDCAData, DataAttentionDCA): a sanity
# range, not a claim of the papers (docs/proteins.md). A subsample or any other file of the same
# family has another checksum and no reference.
PLMDCA_REFERENCE = {
    "771fce05d3c69bdc775a6f4f24f7a7a0853c217d8d2f29bfd5d168dfe51de831": ("PF00014", 1.00),
    "6e0550fab311c6bebc0a5dde34cdf67ebd3a384c7346e88662c5097961f2ab35": ("PF13354", 0.97),
    "72dbead369277af2afd0cb4897db658434e7c48e738257b2f2d100792a98168d": ("PF00677", 0.91),
    "633db00afaa1dcb663b164804273420c029b6a5e4729559c7cc3f8edf2673f4f": ("PF00684", 0.74),
}


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
    """Mean and s.e.m. over families of ``column`` of model ``a`` minus ``b``, each family's
    splits averaged first (n = families)."""
    wide = models.pivot_table(index="family", columns="model", values=column, aggfunc="mean")
    if a not in wide or b not in wide:
        return c.Measure(np.nan, np.nan, 0)
    m = c.mean_sem((wide[a] - wide[b]).dropna())
    return c.Measure(m.value, m.error, m.n, tests)


def _yardstick(models: pd.DataFrame) -> str:
    """The contact definition(s) and the random-ranking P@L (mean over families) of a run."""
    if "P@k_random" not in models:
        return ""
    per_family = models.groupby("family")["P@k_random"].first()
    definitions = "; ".join(sorted(set(models["contacts"].dropna()))) if "contacts" in models \
        else ""
    return (f"; contacts: {definitions}; random-ranking P@L {per_family.mean():.2f} "
            f"(mean of {len(per_family)} families)")


def claims_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``; ``models``
    required, ``families`` for the plmDCA reference check)."""
    models = tables["models"]
    yardstick = _yardstick(models)
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
                              m, f"paired P@L factored (best) - {other} > {bound:g} ({kind})"
                              f"{yardstick}", verdict))
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
    families = tables.get("families")
    if has_precision and "plmdca" in present and families is not None:
        for family, sha256 in zip(families["family"], families["alignment_sha256"],
                                  strict=True):
            if sha256 not in PLMDCA_REFERENCE:
                continue
            source, ref = PLMDCA_REFERENCE[sha256]
            values = models[(models["model"] == "plmdca") & (models["family"] == family)]["P@L"]
            if len(values):
                m = c.mean_sem(values - ref)
                rows.append(c.row(
                    f"proteins.plmdca_reference.{family}", STUDY, "AttentionDCA result files",
                    f"plmDCA reaches the precision the field reports on this alignment ({source}, "
                    f"sha256 {sha256[:12]}; sanity check)", f"{ref:g}", m,
                    f"P@L plmdca - reference within +-{REFERENCE_TOLERANCE:g}{yardstick}",
                    c.within(m, REFERENCE_TOLERANCE)))
    return c.table(rows)
