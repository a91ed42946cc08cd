"""Contact lists to take away: a focus sequence's residue numbers (plmc's ``-f``), the lists in
plmc's couplings-file columns, the check that their numbering reads the focus's residues, the
configuration a final fit takes from its splits and the fit itself, and a family without a
structure on the results page's table."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest

from tests.test_proteins_models import COUPLING, TRANSFORMER_FIT
from workflow_lib.proteins.alignment import AlignmentError, check_families, find_focus
from workflow_lib.proteins.contact_lists import (
    COLUMNS,
    check_numbering,
    contact_list,
    write_contact_list,
)
from workflow_lib.proteins.fitting import fit_final
from workflow_lib.studies.proteins import tables

# An A3M alignment: REF/10-20 has 11 residues, 2 of them insert states (lower case), a gap in
# aligned column 3 and an ambiguity code X in aligned column 8.
A3M = (">REF/10-20 reference\nAC-DklEFGXHI\n"
       ">other/1-9\nACWDEFG-HI\n"
       ">REF2/5-13\nMC-DEFGHHI\n")


def _write(tmp_path, text: str, name: str = "aln.a3m"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_focus_numbers_its_residues_from_the_start_of_its_name(tmp_path):
    focus = find_focus(_write(tmp_path, A3M), "REF")
    assert (focus.name, focus.record, focus.start) == ("REF/10-20", 0, 10)
    assert focus.residues == "ACDKLEFGXHI"
    # aligned columns A C - D E F G X H I: residue numbers (0 at the gap), the inserts k, l
    # (residues 13 and 14) counted though not aligned
    np.testing.assert_array_equal(focus.numbers, [10, 11, 0, 12, 15, 16, 17, 18, 19, 20])
    # the model's columns: an amino acid in upper case (not the gap, not X)
    np.testing.assert_array_equal(focus.columns, [1, 1, 0, 1, 1, 1, 1, 0, 1, 1])
    assert find_focus(tmp_path / "aln.a3m", "REF/10-20").record == 0  # the whole name
    assert find_focus(tmp_path / "aln.a3m", "REF2").start == 5


@pytest.mark.parametrize(("text", "focus", "problem"), [
    (A3M, "MISSING", "focus 'MISSING': no record of that name"),
    (A3M + ">REF/30-40\nAC-DklEFGXHI\n", "REF", "2 records match ('REF/10-20', 'REF/30-40')"),
    (">REF/10-30\nACDEF\n>b\nACDEF\n", "REF", "holds 5 residues but its name spans 10-30 (21)"),
    (">REF\n-----\n>b\nACDEF\n", "REF", "no amino acid in an aligned column"),
], ids=["missing", "ambiguous", "residues_dropped", "all_gaps"])
def test_a_bad_focus_is_one_line_naming_it_and_what_to_do(tmp_path, text, focus, problem):
    path = _write(tmp_path, text)
    with pytest.raises(AlignmentError) as info:
        find_focus(path, focus)
    message = str(info.value)
    assert message.startswith(f"{path}: focus {focus!r}: ") and problem in message
    assert "\n" not in message and "; " in message
    lines = check_families([{"name": "fam", "alignment": str(path), "focus": focus}], tmp_path)
    assert lines == [f"proteins.families 'fam': {message}"]


def _scores(L: int, seed: int = 0) -> np.ndarray:
    s = np.random.default_rng(seed).normal(size=(L, L))
    return s + s.T


def test_a_list_in_plmcs_columns_numbered_by_alignment_column(tmp_path):
    columns = np.array([1, 2, 4, 5, 6, 7, 9, 12])  # a gap filter dropped columns 3, 8, 10, 11
    scores = _scores(8)
    table = contact_list(scores, columns, 3)
    assert list(table.columns) == list(COLUMNS)
    assert (table["a_i"] == "-").all() and (table["a_j"] == "-").all() and (table["0"] == 0).all()
    assert (np.diff(table["score"]) <= 0).all()  # best first
    assert set(table["i"]) | set(table["j"]) <= set(columns)
    assert (table["j"] - table["i"] >= 3).all()  # separation in alignment columns
    best = np.unravel_index(np.argmax(np.triu(scores, 1) * (np.subtract.outer(columns, columns)
                                                            <= -3)), scores.shape)
    assert (table.loc[0, "i"], table.loc[0, "j"]) == (columns[best[0]], columns[best[1]])
    check_numbering(table)
    write_contact_list(table, tmp_path / "x.tsv")
    lines = (tmp_path / "x.tsv").read_text().splitlines()
    assert lines[0] == "i\ta_i\tj\ta_j\t0\tscore" and len(lines) == len(table) + 1
    back = pd.read_csv(tmp_path / "x.tsv", sep="\t")
    np.testing.assert_allclose(back["score"], table["score"], rtol=1e-5)


def test_a_list_numbered_by_the_focus_with_distances(tmp_path):
    focus = find_focus(_write(tmp_path, A3M), "REF")
    columns = np.flatnonzero(focus.columns) + 1  # 1-based alignment columns of the model
    numbers = focus.numbers[focus.columns]
    letters = "ACDEFGHI"  # the focus's residues at those columns
    L = len(columns)
    distances = np.full((L, L), 12.0)
    distances[0, 5] = distances[5, 0] = 4.0
    distances[1, 6] = distances[6, 1] = np.nan
    table = contact_list(_scores(L, 1), columns, 2, numbers, letters, distances, 8.0)
    assert list(table.columns) == [*COLUMNS, "distance", "contact"]
    check_numbering(table, focus.residues, focus.start)
    row = table[(table["i"] == 10) & (table["j"] == 17)].iloc[0]  # columns 1 and 7
    assert (row["a_i"], row["a_j"], row["distance"], row["contact"]) == ("A", "G", 4.0, 1)
    unknown = table[(table["i"] == 11) & (table["j"] == 19)].iloc[0]
    assert np.isnan(unknown["distance"]) and unknown["contact"] is pd.NA
    write_contact_list(table, tmp_path / "y.tsv")
    line = next(x for x in (tmp_path / "y.tsv").read_text().splitlines()
                if x.startswith("11\tC\t19\tH"))
    assert line.endswith("\t\t")  # unknown distance and contact: empty cells
    # a list whose letters are off by one residue fails the check
    shifted = table.assign(i=table["i"] + 1)
    shifted = shifted[shifted["i"] < shifted["j"]]
    with pytest.raises(ValueError, match=r"residue i = \d+ is '.' in the focus sequence"):
        check_numbering(shifted, focus.residues, focus.start)
    with pytest.raises(ValueError, match="without a focus"):
        check_numbering(table)


def test_the_final_fit_takes_the_configuration_chosen_on_most_splits():
    rows = [("factored-H4", 0, 1.0), ("factored-H16", 0, 1.1),
            ("factored-H4", 1, 1.2), ("factored-H16", 1, 1.1),
            ("factored-H4", 2, 1.0), ("factored-H16", 2, 1.3)]
    models = pd.DataFrame([{"family": "A", "model": m, "realisation": r, "train_loss": v,
                            "validation_loss": v, "heldout_loss": v} for m, r, v in rows])
    final = tables.final_choice(tables.factored_choice(models))
    assert final.to_dict("records") == [{"family": "A", "model": "factored-H4", "chosen": 2,
                                         "splits": 3}]
    # a tie (one split each): the lower mean validation loss, H16's 1.1 against H4's 1.15
    tie = tables.final_choice(tables.factored_choice(models[models["realisation"] < 2]))
    assert tie.loc[0, "model"] == "factored-H16" and tie.loc[0, "chosen"] == 1


def test_a_family_without_structure_reads_precision_unknown():
    models = pd.DataFrame({"family": ["A", "A", "B", "B"], "model": ["m", "n", "m", "n"],
                           "realisation": 0, "L": 10, "heldout_loss": [1.0, 2.0, 3.0, 4.0],
                           "P@L": [0.5, 0.6, np.nan, np.nan],
                           "contacts": ["d < 8 Å, j - i >= 6"] * 2 + [np.nan] * 2})
    out = tables.family_models(models)
    assert list(out["contacts"]) == ["d < 8 Å, j - i >= 6"] * 2 + [tables.NO_STRUCTURE] * 2
    alone = tables.family_models(models.drop(columns=["P@L", "contacts"]))
    assert (alone["contacts"] == tables.NO_STRUCTURE).all()
    assert "precision unknown" in tables.NO_STRUCTURE


def test_a_final_fit_takes_every_sequence_and_a_transformer_its_steps():
    """No validation or held-out sequence: a transformer runs exactly the steps its splits chose,
    one evaluation at their end (its last parameters kept); plmDCA fits as on a split."""
    seqs = np.random.default_rng(6).integers(0, 4, (300, 6)).astype(np.int32)
    seqs[:, 5] = seqs[:, 1]
    data = (seqs, np.ones(300))
    res = fit_final("vanilla1", TRANSFORMER_FIT, data, jax.random.key(0), steps=120)
    assert list(res.curve["step"]) == [120] and res.metrics["steps"] == 120
    assert res.metrics["converged"] and res.metrics["stop_reason"] == "120 steps, the split " \
        "fits' stop"
    assert np.isnan(res.validation_loss) and res.test_losses.shape == (0,)
    assert res.scores.shape == res.jacobian_scores.shape == (6, 6)
    with pytest.raises(ValueError, match="needs its steps"):
        fit_final("vanilla1", TRANSFORMER_FIT, data, jax.random.key(0))
    plm = fit_final("plmdca", COUPLING, data, jax.random.key(0))
    assert np.isnan(plm.validation_loss) and plm.test_losses.shape == (0,)
    assert plm.params["J"].shape == (6, 6, 21, 21) and np.isfinite(plm.train_loss)
    i, j = np.unravel_index(np.argmax(plm.scores), plm.scores.shape)
    assert {int(i), int(j)} == {1, 5}  # the copied site is the top pair
