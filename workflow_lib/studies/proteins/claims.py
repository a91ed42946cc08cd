"""The protein claim that motivates the Potts paper, measured on the study's tables with
``workflow_lib.claims.statistics``: on protein families a single layer of factored attention
"performed as well as a deep transformer, and significantly better than a single layer of vanilla
self-attention" (Bhattacharya et al. 2020, quoted by Rende et al. 2024, Sec. I), in contact
precision at L (P@L) and in held-out masked-token loss. The units are families: each model's
held-out loss and P@L are averaged over the family's held-out splits first (the splits share most
sequences), then paired per family; factored attention is represented, on each split, by its number
of heads (and attention form) with the lowest validation loss (``tables. factored_choice``), a
choice made on validation sequences carved from the training sequences, never on the held-out ones
the claims test. A comparison with a transformer is gated by the check that it reached its stop
criterion on every split (``proteins.<arch>.converged``); a reported check says whether the factored
fits' penalty lets the held-out loss rise with the heads. "Significantly better" is a one-sided
paired test; "as well as" a deep transformer and "comparable to" plmDCA at contact prediction (the
anchors' words: a single layer of attention "is comparable to state-of-the-art Potts model at
contact prediction") are non-inferiority tests with the project's margin, a ``Criterion`` with
its reason; "with fewer parameters" (AttentionDCA) compares the chosen configuration's parameter
count with plmDCA's on every family. Each precision row
states the contact definition and the random-ranking precision beside it. Every claim is gated by
the check that the fits converged, the plmDCA comparison also by plmDCA's reference checks where the
run has them."""

from __future__ import annotations

import pandas as pd

from workflow_lib.claims import statistics as c

STUDY = "proteins"
SOURCE = "Bhattacharya et al. 2020"
PARAMETERS_SOURCE = "Caredda & Pagnani (AttentionDCA)"
SPREAD = ("the split-to-split s.d. of one model on one family, averaged over the families of "
          "docs/results/families ("
          "python -c \"import pandas as p; m = p.read_csv('docs/results/families/tables/proteins/"
          "models.csv'); print(m.groupby(['model', 'family'])[['P@L', 'heldout_loss']].std())\")")
PRECISION_TOLERANCE = c.Criterion(
    "PRECISION_TOLERANCE", 0.05,
    "calling factored attention's contacts as good as another model's when they are worse by "
    "more than the split-to-split noise of P@L",
    "3 to 4 of the L top-ranked pairs on these families (1/L = 0.011 to 0.019 at L = 53 to 87); "
    "2.5 to 4 times " + SPREAD + ": 0.020 for factored attention, 0.013 for plmDCA; the "
    "project's margin")
LOSS_TOLERANCE = c.Criterion(
    "LOSS_TOLERANCE", 0.02,
    "calling factored attention's held-out loss as low as another model's when it is higher by "
    "more than the split-to-split noise",
    "a 2 % higher perplexity per masked site (exp(0.02) = 1.02); 1.3 to 1.5 times " + SPREAD +
    ": 0.013 nats per site for factored attention, 0.015 for plmDCA; the project's margin")
REFERENCE_TOLERANCE = c.Criterion(
    "REFERENCE_TOLERANCE", 0.1,
    "taking a plmDCA fit that lost the contacts for a working baseline, and failing a working "
    "one for differences of regularisation or contact definition from the published pipeline",
    "well inside the gap between the published P@L of these alignments (0.74 to 1.00) and "
    "random ranking (0.24 to 0.47, families.csv P@k_random); the project's sanity range")
FAMILY = "family"
OVERFIT_RISE = c.Criterion(
    "OVERFIT_RISE", 0.02, "calling a noise-level rise of the held-out loss with the heads "
    "over-fitting", "the held-out-loss margin of the claims' non-inferiority test "
    "(LOSS_TOLERANCE): a rise below it is one the claims would call 'as well as'; gates no "
    "claim, the claims compare the heads chosen on the validation split")
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


def factored_representative(models: pd.DataFrame, choice: pd.DataFrame) -> pd.DataFrame:
    """Per family and realisation, the row of ``models`` of the factored configuration (heads
    and attention form) that ``choice`` (``tables.factored_choice``) marks chosen, renamed
    ``factored``: a choice made on the split's validation sequences, before the held-out loss and
    the contacts it is tested on are seen."""
    keys = ["family", "realisation", "model"]
    chosen = choice.loc[choice["chosen"].astype(bool), keys]
    return models.merge(chosen, on=keys).assign(model="factored")


def heldout_rise(choice: pd.DataFrame) -> pd.Series:
    """Per (family, realisation, attention form) of ``choice`` (``tables.factored_choice``) with
    two head counts or more: the largest rise of the held-out loss of a head count above the
    lowest of the smaller ones, among the head counts whose training loss is below that of every
    smaller one (0 when none): over-fitting in H, the held-out loss rising while the training
    loss falls."""

    def rise(unit: pd.DataFrame) -> float:
        unit = unit.sort_values("heads")
        heldout, train = unit["heldout_loss"].to_numpy(), unit["train_loss"].to_numpy()
        rises = [heldout[k] - heldout[:k].min() for k in range(1, len(unit))
                 if train[k] < train[:k].min()]
        return max([0.0, *rises])

    units = choice.groupby(["family", "realisation", "attention"])
    return units.apply(rise)[units.size() > 1]


def _by_family(models: pd.DataFrame, a: str, b: str, column: str, aggfunc: str = "mean",
               ratio: bool = False) -> pd.Series:
    """Per family, ``column`` of model ``a`` minus (or, ``ratio``, over) ``b``, each family's
    splits aggregated first (``aggfunc``; the splits share most sequences: the family is the
    unit)."""
    wide = models.pivot_table(index="family", columns="model", values=column, aggfunc=aggfunc)
    if a not in wide or b not in wide:
        return pd.Series(dtype=float)
    return (wide[a] / wide[b] if ratio else wide[a] - wide[b]).dropna()


def _yardstick(models: pd.DataFrame) -> str:
    """The contact definition(s) and the random-ranking P@L (mean over families) of a run."""
    if "P@k_random" not in models:
        return ""
    per_family = models.groupby("family")["P@k_random"].first()
    definitions = "; ".join(sorted(set(models["contacts"].dropna()))) if "contacts" in models \
        else ""
    return (f"; contacts: {definitions}; random-ranking P@L {per_family.mean():.2f} "
            f"(mean of {len(per_family)} families)")


def _row(id: str, figure: str, statement: str, paper: str, test: c.Test, criterion: str,
         unit: str = FAMILY, kind: str = c.CLAIM, gates: tuple[str, ...] = ()) -> dict:
    return c.row(id, STUDY, figure, statement, paper, test, criterion, unit, kind, gates)


def claims_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table of the study from its tables (``registry.STUDY.tables``; ``models`` and
    ``factored_choice`` required, ``families`` for the plmDCA reference check)."""
    models, choice = tables["models"], tables["factored_choice"]
    yardstick = _yardstick(models)
    both = pd.concat([factored_representative(models, choice),
                      models[~models["model"].str.startswith("factored")]])
    present = set(both["model"])
    has_precision = "P@L" in both and both["P@L"].notna().any()
    chosen = "factored (H chosen on the validation split of each held-out split)"
    converged = "proteins.fits_converged"
    references = _reference_checks(models, tables.get("families"), yardstick) if (
        has_precision and "plmdca" in present) else []
    rows = []
    for arch in ("vanilla1", "vanilla3"):
        fits = models[models["model"] == arch]
        if len(fits):
            rows.append(_row(
                f"proteins.{arch}.converged", SOURCE, f"The {arch} transformer reached its stop "
                "criterion before a claim compares with it", "",
                c.every(fits["converged"].astype(bool)),
                "every (family, split): the validation loss stopped improving over the window "
                "(proteins.transformer.window, tol) before the step budget", "split", c.CHECK))
    rises = heldout_rise(choice)
    if len(rises):
        rows.append(_row(
            "proteins.factored_penalty.heldout_vs_heads", SOURCE, "The factored fits' penalty "
            "keeps the held-out loss from rising as heads are added while the training loss "
            "falls (no over-fitting in H; reported, gates nothing)", "",
            c.every(rises <= OVERFIT_RISE.value, rises),
            f"every (family, split, attention form): held-out loss of H minus the lowest of the "
            f"smaller H whose training loss is higher <= {OVERFIT_RISE.value:g} nats per site",
            "split", c.CHECK))
    # against each transformer: P@L (when the run has contacts) and the held-out loss, paired per
    # family; superiority over one layer, non-inferiority within the project's margins to three
    comparisons = (
        ("vanilla1", "factored_beats_vanilla1", "A single layer of factored attention is "
         "significantly better than a single layer of vanilla self-attention", 0.0, 0.0),
        ("vanilla3", "factored_as_vanilla3", "A single layer of factored attention performs as "
         "well as a deep (3-layer) transformer", PRECISION_TOLERANCE.value,
         LOSS_TOLERANCE.value),
    )
    for other, name, statement, precision_margin, loss_margin in comparisons:
        if not {"factored", other} <= present:
            continue
        margin = " (non-inferiority; the project's margin)" if precision_margin else ""
        bound = 0 - precision_margin  # 0, not -0, at no margin
        gates = (converged, f"proteins.{other}.converged")
        if has_precision:
            rows.append(_row(
                f"proteins.{name}.precision", SOURCE, statement, "",
                c.greater(_by_family(both, "factored", other, "P@L"), bound),
                f"paired P@L {chosen} - {other} > {bound:g}{margin}{yardstick}", gates=gates))
        rows.append(_row(
            f"proteins.{name}.heldout_loss", SOURCE, statement, "",
            c.less(_by_family(both, "factored", other, "heldout_loss"), loss_margin),
            f"paired held-out loss {chosen} - {other} < {loss_margin:g} nats per masked site"
            f"{margin}", gates=gates))
    if {"factored", "plmdca"} <= present and has_precision:
        tolerance = PRECISION_TOLERANCE.value
        rows.append(_row(
            "proteins.factored_as_plmdca.precision", SOURCE, "A single layer of factored "
            "attention is comparable to a Potts model fitted by pseudo-likelihood (plmDCA) at "
            "contact prediction", "",
            c.greater(_by_family(both, "factored", "plmdca", "P@L"), -tolerance),
            f"paired P@L {chosen} - plmdca > {-tolerance:g} (non-inferiority; the project's "
            f"margin){yardstick}", gates=(converged, *(r["id"] for r in references))))
    if {"factored", "plmdca"} <= present and has_precision and "n_params" in both:
        ratio = _by_family(both, "factored", "plmdca", "n_params", aggfunc="max", ratio=True)
        rows.append(_row(
            "proteins.factored_fewer_parameters", PARAMETERS_SOURCE, "Factored attention "
            "predicts contacts with fewer parameters than plmDCA", "",
            c.every(ratio < 1, ratio),
            "every family: parameters of the factored configuration chosen on each split (the "
            "largest over the splits) / plmDCA's < 1; measured: the mean ratio",
            gates=(converged,)))
    if "converged" in models:
        coupling = ~models["model"].str.startswith("vanilla")  # transformers: their own checks
        fits = models.loc[coupling, "converged"].astype(bool)
        rows.append(_row(
            converged, SOURCE, "Every coupling model's fit converged", "", c.every(fits),
            "every (family, model, split) of plmDCA and factored attention: max |gradient| "
            "below proteins.grad_tol (the transformers' stops: proteins.<arch>.converged); "
            "measured: the fraction converged", "fit", c.CHECK))
    return c.table(rows + references)


def _reference_checks(models: pd.DataFrame, families: pd.DataFrame | None,
                      yardstick: str) -> list[dict]:
    """Per family whose alignment file has a published plmDCA precision (``PLMDCA_REFERENCE``,
    keyed by its sha256), the check that every split's plmDCA P@L lies within
    ``REFERENCE_TOLERANCE`` of it."""
    if families is None:
        return []
    rows = []
    for family, sha256 in zip(families["family"], families["alignment_sha256"], strict=True):
        if sha256 not in PLMDCA_REFERENCE:
            continue
        source, ref = PLMDCA_REFERENCE[sha256]
        values = models[(models["model"] == "plmdca") & (models["family"] == family)]["P@L"]
        if len(values):
            gap = values - ref
            rows.append(_row(
                f"proteins.plmdca_reference.{family}", "AttentionDCA result files",
                f"plmDCA reaches the precision the field reports on this alignment ({source}, "
                f"sha256 {sha256[:12]}; sanity check)", f"{ref:g}",
                c.every(gap.abs() <= REFERENCE_TOLERANCE.value, gap),
                f"every held-out split: |P@L plmdca - reference| <= "
                f"{REFERENCE_TOLERANCE.value:g} (REFERENCE_TOLERANCE){yardstick}", "split",
                c.CHECK))
    return rows
