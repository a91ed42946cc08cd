"""The protein study's claims table: verdicts from paired differences over families (each
family's splits averaged first), factored attention entering with the number of heads its training
loss chooses; the plmDCA reference keyed by the alignment's checksum; a fit that did not converge
(or a plmDCA off its reference) leaves the claims it gates not resolved."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib import claims as c
from workflow_lib.claims import FAILS, HOLDS, NOT_RESOLVED
from workflow_lib.studies.proteins import claims as proteins
from workflow_lib.studies.proteins.claims import claims_table, factored_representative

# P@L, held-out loss and training loss per model on a made-up family, before noise: factored-H4
# fits its training sequences best, is as good as 3 layers and as plmDCA, far better than 1 layer.
CLEAN = {"factored-H1": (0.60, 1.60, 1.55), "factored-H4": (0.85, 1.50, 1.40),
         "plmdca": (0.86, 1.49, 1.40), "vanilla1": (0.40, 1.90, 1.80),
         "vanilla3": (0.84, 1.51, 1.45)}


PF13354_SHA256 = "6e0550fab311c6bebc0a5dde34cdf67ebd3a384c7346e88662c5097961f2ab35"


def _models(clean: dict, splits: int, families: tuple[str, ...] = ("FAM",),
            noise: float = 1.0, stuck: str = "") -> pd.DataFrame:  # fmt: skip
    """Per family, model and split, the models table's row (``stuck``: a model whose fits did
    not converge)."""
    rng = np.random.default_rng(0)
    rows = [{"family": family, "model": model, "realisation": r, "L": 50,
             "converged": model != stuck,
             "P@L": p + noise * 0.005 * rng.standard_normal(), "heldout_loss": loss
             + noise * 0.002 * rng.standard_normal(), "train_loss": train, "P@k_random": 0.4,
             "contacts": "distance < 8 Å, j - i >= 6"}
            for family in families for model, (p, loss, train) in clean.items()
            for r in range(splits)]
    return pd.DataFrame(rows)


def _table(models: pd.DataFrame, sha256: dict[str, str] | None = None) -> pd.DataFrame:
    families = pd.DataFrame({"family": list(dict.fromkeys(models["family"]))})
    families["alignment_sha256"] = [(sha256 or {}).get(f, "0" * 64) for f in families["family"]]
    return claims_table({"models": models, "families": families})


def _verdicts(models: pd.DataFrame, sha256: dict[str, str] | None = None) -> dict[str, str]:
    table = _table(models, sha256)
    return dict(zip(table["id"], table["verdict"], strict=True))


FIVE = tuple(f"PF{k:05d}" for k in range(1, 6))


def test_factored_attention_enters_with_the_heads_its_training_loss_chooses():
    chosen = factored_representative(_models(CLEAN, 3))
    assert set(chosen["model"]) == {"factored"}
    np.testing.assert_allclose(chosen["P@L"], 0.85, atol=0.02)
    # a configuration that fits its training sequences best is chosen, whatever its test loss
    worse = {**CLEAN, "factored-H1": (0.60, 1.60, 1.30)}
    np.testing.assert_allclose(factored_representative(_models(worse, 3))["P@L"], 0.60, atol=0.02)


def test_clean_run_holds_and_a_doctored_table_turns_the_verdicts():
    verdicts = _verdicts(_models(CLEAN, 3, FIVE))
    assert set(verdicts.values()) == {HOLDS}, verdicts
    assert len(verdicts) == 6 and "proteins.fits_converged" in verdicts
    doctored = {**CLEAN, "vanilla1": (0.95, 1.30, 1.30), "vanilla3": (0.95, 1.40, 1.40)}
    verdicts = _verdicts(_models(doctored, 3, FIVE))
    assert verdicts["proteins.factored_beats_vanilla1.precision"] == FAILS
    assert verdicts["proteins.factored_beats_vanilla1.heldout_loss"] == FAILS
    assert verdicts["proteins.factored_as_vanilla3.precision"] == FAILS
    assert verdicts["proteins.factored_as_vanilla3.heldout_loss"] == FAILS


def test_the_units_are_families_not_splits():
    """Many splits of one family are one unit: n = 1, nothing resolved; the precision rows state
    the contact definition and the random-ranking precision."""
    table = claims_table({"models": _models(CLEAN, 8)})
    table = table[table["kind"] == c.CLAIM]
    assert set(table["n"]) == {1} and set(table["verdict"]) == {NOT_RESOLVED}
    table = claims_table({"models": _models(CLEAN, 2, FIVE)}).set_index("id")
    assert table.loc["proteins.fits_converged", "n"] == 50  # the check counts fits
    table = table[table["kind"] == c.CLAIM].reset_index()
    assert set(table["n"]) == {5}
    precision = table[table["id"].str.endswith(".precision")]
    assert precision["criterion"].str.contains(
        "contacts: distance < 8 Å, j - i >= 6; random-ranking P@L 0.40 (mean of 5 families)",
        regex=False).all()


def test_splits_are_averaged_before_pairing():
    """Per family, vanilla1 beats factored on one split by a lot and loses on the other by a
    little: the family means favour vanilla1 in every family, n counts the 5 families, and the
    measured difference is the mean of the family means."""
    rows = []
    for f, family in enumerate(FIVE):
        for r, (fac, van) in enumerate(((0.50, 0.80), (0.60, 0.50))):
            for model, p in (("factored-H1", fac + 0.001 * f), ("vanilla1", van)):
                rows.append({"family": family, "model": model, "realisation": r, "L": 50,
                             "P@L": p, "heldout_loss": 1.0, "train_loss": 1.0,
                             "converged": True})
    table = claims_table({"models": pd.DataFrame(rows)}).set_index("id")
    row = table.loc["proteins.factored_beats_vanilla1.precision"]
    assert row["n"] == 5 and row["verdict"] == FAILS
    np.testing.assert_allclose(row["measured"], -0.1 + 0.002, atol=1e-12)


def test_the_plmdca_reference_is_keyed_by_the_alignments_checksum():
    close = {**CLEAN, "plmdca": (0.92, 1.49, 1.40)}
    # a family named after PF13354 whose file is another (a subsample): no reference
    assert not any(k.startswith("proteins.plmdca_reference") for k in
                   _verdicts(_models(close, 3, ("PF13354",))))
    # the shipped PF13354 file under any name is held to PF13354's value
    verdicts = _verdicts(_models(close, 3, ("mine",)), {"mine": PF13354_SHA256})
    assert verdicts["proteins.plmdca_reference.mine"] == HOLDS
    verdicts = _verdicts(_models(CLEAN, 3, ("mine",)), {"mine": PF13354_SHA256})
    assert verdicts["proteins.plmdca_reference.mine"] == FAILS  # 0.86 vs 0.97: 0.11 below


def test_without_distances_only_the_losses_are_judged():
    models = _models(CLEAN, 3).drop(columns=["P@L", "P@k_random", "contacts"])
    ids = set(claims_table({"models": models})["id"])
    assert ids == {"proteins.factored_beats_vanilla1.heldout_loss",
                   "proteins.factored_as_vanilla3.heldout_loss", "proteins.fits_converged"}


def test_a_fit_that_did_not_converge_leaves_every_claim_not_resolved():
    table = _table(_models(CLEAN, 3, FIVE, stuck="plmdca")).set_index("id")
    assert table.loc["proteins.fits_converged", "verdict"] == FAILS
    claims = table[table["kind"] == c.CLAIM]
    assert set(claims["verdict"]) == {NOT_RESOLVED}
    assert set(claims["gated_by"]) == {"proteins.fits_converged"}


def test_a_plmdca_off_its_reference_gates_the_plmdca_comparison_only():
    """plmDCA 0.11 below the published precision of the shipped PF13354 file: the equivalence
    with plmDCA is not resolved, the comparisons with the transformers keep their verdicts."""
    table = _table(_models(CLEAN, 3, (*FIVE[:4], "mine")), {"mine": PF13354_SHA256})
    rows = table.set_index("id")
    assert rows.loc["proteins.plmdca_reference.mine", "verdict"] == FAILS
    assert rows.loc["proteins.factored_as_plmdca.precision", "verdict"] == NOT_RESOLVED
    assert rows.loc["proteins.factored_as_plmdca.precision", "gated_by"] == (
        "proteins.plmdca_reference.mine")
    others = rows[(rows["kind"] == c.CLAIM) & ~rows.index.str.contains("plmdca")]
    assert len(others) == 4 and set(others["verdict"]) == {HOLDS}


def test_every_margin_is_a_criterion_with_its_reason():
    names = [k.name for k in c.criteria(proteins)]
    assert names == ["PRECISION_TOLERANCE", "LOSS_TOLERANCE", "REFERENCE_TOLERANCE"]
    assert all(k.protects and k.source for k in c.criteria(proteins))
