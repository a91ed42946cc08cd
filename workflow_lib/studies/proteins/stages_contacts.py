"""Stage ``protein_contact_lists`` of the protein study (``proteins.final_fit``): a family's
contact lists to take away, their summary and its contact map, from its fits on every sequence
(``stages_final``). The science is in ``workflow_lib.proteins.contact_lists``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_lib.core.artefacts import read_artefact, write_csv
from workflow_lib.core.errors import StageError
from workflow_lib.core.plotting import save_figure
from workflow_lib.core.registry import Job
from workflow_lib.proteins import contacts
from workflow_lib.proteins.alignment import ALPHABET
from workflow_lib.proteins.contact_lists import check_numbering, contact_list, write_contact_list
from workflow_lib.studies.proteins import figures, tables
from workflow_lib.studies.proteins.artefacts import PROTEIN_DATA, PROTEIN_FINAL_FIT

log = logging.getLogger("workflow_lib.proteins")


SUMMARY_ATTRS = ("configuration", "chosen", "M", "M_eff", "n_params", "converged", "train_loss",
                 "seconds")


def protein_contact_lists(job: Job) -> None:
    """Write the family's contact lists, one per final fit and score (``contact_lists``:
    plmc's couplings-file columns, numbered by the family's focus sequence when it names one,
    else by alignment column; distance and contact where it has a structure), their summary and
    the family's contact map (``figures.contact_maps``: true contacts below the diagonal, each
    list's top L above it).

    ``summary.csv``: one row per list: list (its file's name), the fit's configuration and how
    it was chosen, numbering, L, the sequences and M_eff it was fitted on, its parameters,
    convergence, training loss and seconds, ``P@L`` of the list (NaN without a structure) and
    ``contacts``, the contact definition (``tables.NO_STRUCTURE`` without one).
    Verified: every list's numbering maps back to the focus sequence's residues
    (``check_numbering``), and the lists are those the outputs name.
    """
    p, cfg = job.params, job.params["contacts"]
    data = read_artefact(job.input["data"], PROTEIN_DATA, required=("seqs", "columns"))
    fits = [read_artefact(f, PROTEIN_FINAL_FIT, required=("scores",)) for f in job.input["fits"]]
    columns, L = data["columns"], int(data.attrs["L"])
    focus = data.attrs.get("focus")
    numbers = data["residues"] if focus else None
    letters = ("".join(ALPHABET[c] for c in data["seqs"][int(data.attrs["focus_row"])])
               if focus else None)
    distances = data.data.get("distances")
    definition = (tables.contact_definition(p["distance_kind"], cfg) if distances is not None
                  else tables.NO_STRUCTURE)
    numbering = (f"residues of the focus sequence {focus}" if focus
                 else "alignment columns (1-based)")
    paths = {Path(path).stem: path for path in job.output.values() if path.endswith(".tsv")}
    lists, rows = {}, []
    for fit in fits:
        for name, scores in tables.score_kinds(fit):
            table = contact_list(scores, columns, cfg["min_separation"], numbers, letters,
                                 distances, cfg["threshold"])
            try:
                check_numbering(table, data.attrs.get("focus_sequence"),
                                int(data.attrs.get("focus_start", 1)))
            except ValueError as exc:
                raise StageError(f"{p['family']} {name}: {exc}") from None
            lists[name] = table
            precision = (contacts.precision_at(scores, distances, cfg["min_separation"],
                                               cfg["threshold"], [L], columns)[L]
                         if distances is not None else float("nan"))
            rows.append({"list": f"{name}.tsv", **{k: fit.attrs[k] for k in SUMMARY_ATTRS},
                         "numbering": numbering, "L": L, "P@L": precision,
                         "contacts": definition})
    if set(lists) != set(paths):
        raise StageError(f"{p['family']}: the final fits give the lists {sorted(lists)}, the "
                         f"rule names {sorted(paths)}")
    for name, table in lists.items():
        write_contact_list(table, paths[name])
    write_csv(pd.DataFrame(rows), job.output["summary"])
    known = "distance" in next(iter(lists.values()))
    frame = pd.concat([table.assign(model=name, rank=np.arange(1, len(table) + 1))
                       for name, table in lists.items()], ignore_index=True)
    frame = frame.assign(
        family=p["family"], L=L, contacts=definition,
        distance=frame["distance"] if known else np.nan,
        contact=frame["contact"].fillna(0).astype(bool) if known else False)
    axes = f"residue of {focus}" if focus else "alignment column"
    save_figure(figures.contact_maps(frame, axes),
                {"png": job.output["png"], "pdf": job.output["pdf"]})
    log.info("%s: %d contact lists of %d pairs each, numbered by %s (%s)", p["family"],
             len(lists), len(frame) // len(lists), numbering, json.dumps(sorted(lists)))
