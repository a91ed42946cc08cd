"""The protein study's claims table: verdicts from paired differences over (family, split) units,
factored attention entering with its best number of heads."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_lib.claims import FAILS, HOLDS, NOT_RESOLVED
from workflow_lib.studies.proteins.claims import best_factored, claims_table

# P@L and held-out loss per model on a made-up family, before noise: factored-H4 is the best
# factored run, as good as 3 layers and as plmDCA, far better than 1 layer.
CLEAN = {"factored-H1": (0.60, 1.60), "factored-H4": (0.85, 1.50), "plmdca": (0.86, 1.49),
         "vanilla1": (0.40, 1.90), "vanilla3": (0.84, 1.51)}


def _models(clean: dict, splits: int, family: str = "FAM") -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"family": family, "model": model, "realisation": r, "L": 50,
             "P@L": p + 0.005 * rng.standard_normal(), "heldout_loss": loss
             + 0.002 * rng.standard_normal()}
            for model, (p, loss) in clean.items() for r in range(splits)]
    return pd.DataFrame(rows)


def _verdicts(models: pd.DataFrame) -> dict[str, str]:
    table = claims_table({"models": models})
    return dict(zip(table["id"], table["verdict"], strict=True))


def test_best_factored_is_picked_by_held_out_loss_among_the_candidates():
    best, tests = best_factored(_models(CLEAN, 3))
    assert tests == 2 and set(best["model"]) == {"factored"}
    np.testing.assert_allclose(best["P@L"], 0.85, atol=0.02)


def test_clean_run_holds_and_a_doctored_table_turns_the_verdicts():
    verdicts = _verdicts(_models(CLEAN, 5))
    assert set(verdicts.values()) == {HOLDS}, verdicts
    assert len(verdicts) == 5
    doctored = {**CLEAN, "vanilla1": (0.95, 1.30), "vanilla3": (0.95, 1.40)}
    verdicts = _verdicts(_models(doctored, 5))
    assert verdicts["proteins.factored_beats_vanilla1.precision"] == FAILS
    assert verdicts["proteins.factored_beats_vanilla1.heldout_loss"] == FAILS
    assert verdicts["proteins.factored_as_vanilla3.precision"] == FAILS
    assert verdicts["proteins.factored_as_vanilla3.heldout_loss"] == FAILS


def test_one_split_is_not_resolved_and_a_reference_family_is_checked():
    verdicts = _verdicts(_models(CLEAN, 1))
    assert set(verdicts.values()) == {NOT_RESOLVED}
    verdicts = _verdicts(_models(CLEAN, 3, family="PF13354"))
    assert verdicts["proteins.plmdca_reference.PF13354"] == FAILS  # 0.86 vs 0.97: 0.11 below
    close = {**CLEAN, "plmdca": (0.92, 1.49)}
    verdicts = _verdicts(_models(close, 3, family="PF13354"))
    assert verdicts["proteins.plmdca_reference.PF13354"] == HOLDS


def test_without_distances_only_the_losses_are_judged():
    models = _models(CLEAN, 3).drop(columns="P@L")
    ids = set(claims_table({"models": models})["id"])
    assert ids == {"proteins.factored_beats_vanilla1.heldout_loss",
                   "proteins.factored_as_vanilla3.heldout_loss"}
