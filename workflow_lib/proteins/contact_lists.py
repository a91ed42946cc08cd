"""Contact lists to take away: a fit's ranked residue pairs in the columns of plmc's couplings
file (its ``-c`` output: ``i a_i j a_j 0 score``), one tab-separated file with a header line.

``i < j`` are residue numbers: those of a focus sequence (``alignment.Focus``, as plmc's ``-f``)
when the family names one, with ``a_i``, ``a_j`` the focus's residues there; else the 1-based
alignment columns, with ``-`` for the letters (as plmc without a focus). ``0`` is plmc's unused
column, ``score`` the fit's contact score (``contacts``: APC-corrected Frobenius norms, or a
transformer's attention or Jacobian scores). Where the family has a structure two more columns
follow: ``distance`` (Å, empty where unknown) and ``contact`` (1 when below the threshold, 0
above, empty where unknown). The pairs are those the study ranks (``contacts.ranked_pairs``: at
least ``min_separation`` alignment columns apart), best-scored first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from workflow_lib.core.artefacts import atomic_path
from workflow_lib.proteins import contacts

COLUMNS = ("i", "a_i", "j", "a_j", "0", "score")  # plmc's couplings file
STRUCTURE_COLUMNS = ("distance", "contact")  # where the family has a structure
NO_FOCUS = "-"  # plmc's letter of a residue without a focus sequence


def contact_list(scores: np.ndarray, columns: np.ndarray, min_separation: int,
                 numbers: np.ndarray | None = None, letters: str | None = None,
                 distances: np.ndarray | None = None,
                 threshold: float | None = None) -> pd.DataFrame:  # fmt: skip
    """The contact list of ``scores: (L, L)`` (module docstring) as a DataFrame.

    ``columns: (L,)``: the 1-based alignment columns of the rows of ``scores`` (the ranking's
    separation, and the numbering without a focus); ``numbers: (L,)`` and ``letters`` (``L``
    characters): the focus's residue number and residue at each (None: no focus);
    ``distances: (L, L)`` Å (NaN: unknown) and the contact ``threshold``: the structure, when
    given."""
    i, j, score = contacts.ranked_pairs(scores, min_separation, columns)
    label = np.asarray(columns if numbers is None else numbers)
    letter = np.array(list(letters) if letters is not None else [NO_FOCUS] * len(label))
    table = pd.DataFrame({"i": label[i], "a_i": letter[i], "j": label[j], "a_j": letter[j],
                          "0": 0, "score": score})
    if distances is not None:
        d = distances[i, j]
        table["distance"] = d
        table["contact"] = pd.array(d < threshold, dtype="Int64")
        table.loc[np.isnan(d), "contact"] = pd.NA
    return table


def check_numbering(table: pd.DataFrame, residues: str | None = None, start: int = 1) -> None:
    """Raise ``ValueError`` (one line: the row and what is wrong) unless every pair of ``table``
    (``contact_list``) has ``i < j`` and, with a focus (its ``residues``, residue ``start + k``
    being ``residues[k]``), the letters ``a_i`` and ``a_j`` are the focus's residues numbered
    ``i`` and ``j``; without one, the letters are ``NO_FOCUS``."""
    order = np.flatnonzero(table["i"].to_numpy() >= table["j"].to_numpy())
    if order.size:
        row = table.iloc[order[0]]
        raise ValueError(f"contact list row {order[0] + 1}: i = {row['i']} is not below "
                         f"j = {row['j']}")
    sequence = np.array(list(residues)) if residues is not None else None
    for number, letter in (("i", "a_i"), ("j", "a_j")):
        if sequence is None:
            expected = np.full(len(table), NO_FOCUS)
        else:
            k = table[number].to_numpy() - start
            inside = (k >= 0) & (k < len(sequence))
            expected = np.where(inside, sequence[np.clip(k, 0, len(sequence) - 1)], "?")
        bad = np.flatnonzero(expected != table[letter].to_numpy())
        if bad.size:
            row, want = table.iloc[bad[0]], str(expected[bad[0]])
            where = (f"{NO_FOCUS!r} without a focus" if sequence is None else
                     "beyond the focus sequence" if want == "?" else
                     f"{want!r} in the focus sequence")
            raise ValueError(f"contact list row {bad[0] + 1}: residue {number} = {row[number]} "
                             f"is {where}, the list says {row[letter]!r}")


def write_contact_list(table: pd.DataFrame, path: str | Path) -> None:
    """Write ``table`` (``contact_list``) atomically to ``path``: tab-separated, a header line,
    scores and distances to 6 significant digits, unknown cells empty."""
    with atomic_path(path) as tmp:
        table.to_csv(tmp, sep="\t", index=False, float_format="%.6g", na_rep="")
