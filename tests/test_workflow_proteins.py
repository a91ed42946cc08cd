"""The protein study end to end with Snakemake: the shipped family in the tiny run of the
default target, a user's own alignment through ``proteins.families``, a family without a
structure to its contact lists and results page, and a bad alignment."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT
from tests.workflow_runs import snakemake
from workflow_lib.claims.statistics import VERDICTS
from workflow_lib.core.artefacts import read_artefact
from workflow_lib.pages.results import results_page, snapshot
from workflow_lib.proteins.alignment import ALPHABET, find_focus, read_alignment
from workflow_lib.proteins.contact_lists import COLUMNS
from workflow_lib.studies.proteins.artefacts import PROTEIN_DATA, PROTEIN_FINAL_FIT, PROTEIN_FIT
from workflow_lib.studies.proteins.registry import STUDY
from workflow_lib.studies.proteins.tables import NO_STRUCTURE

PF00014 = ROOT / "data" / "proteins" / "PF00014"


def test_tiny_run_prepares_fits_and_judges_the_shipped_family(tiny_run):
    results = tiny_run / "results"
    data = read_artefact(results / "proteins" / "PF00014_2000" / "data.h5", PROTEIN_DATA)
    M = int(data.attrs["M"])
    assert data["seqs"].shape == (M, 53) and data["test"].shape == (2, M)
    assert 0 < data.attrs["M_eff"] <= M and np.all(data["weights"] <= 1)
    assert not np.array_equal(data["test"][0], data["test"][1])  # one split per realisation
    assert set(json.loads(data.attrs["seeds"])) == {"seed", "split_r0", "split_r1",
                                                     "validation_r0", "validation_r1"}
    parts = data["train"].astype(int) + data["validation"] + data["test"]
    assert parts.max() == 1 and data["validation"].any(axis=1).all()  # disjoint, each non-empty
    models = pd.read_csv(results / "proteins" / "tables" / "models.csv")
    assert set(models["model"]) == {"factored-H2", "factored_softmax-H2", "plmdca", "vanilla1",
                                    "vanilla1-jacobian", "vanilla3", "vanilla3-jacobian"}
    assert len(models) == 14 and models[["heldout_loss", "P@L"]].notna().all().all()
    families = pd.read_csv(results / "proteins" / "tables" / "families.csv")
    assert 0.3 < families.loc[0, "P@k_random"] < 0.5  # PF00014: an easy family
    assert (models["P@k_random"] == families.loc[0, "P@k_random"]).all()
    assert (models["contacts"] == "minimum inter-atomic distance < 8 Å, j - i >= 6").all()
    assert models["validation_loss"].notna().all()
    choice = pd.read_csv(results / "proteins" / "tables" / "factored_choice.csv")
    assert len(choice) == 4 and (choice.groupby("realisation")["chosen"].sum() == 1).all()
    curves = pd.read_csv(results / "proteins" / "tables" / "training_curves.csv")
    assert set(curves["model"]) == {"vanilla1", "vanilla3"} and (curves["step"] % 5 == 0).all()
    per_family = pd.read_csv(results / "proteins" / "tables" / "family_models.csv")
    assert len(per_family) == 7 and (per_family["splits"] == 2).all()
    fit = read_artefact(results / "proteins" / "PF00014_2000" / "r0" / "vanilla3.h5", PROTEIN_FIT)
    assert fit["jacobian_scores"].shape == (53, 53) and fit["curve/step"][-1] <= 20
    fit = read_artefact(results / "proteins" / "PF00014_2000" / "r1" / "plmdca.h5", PROTEIN_FIT)
    assert fit["params/J"].shape == (53, 53, 21, 21) and fit.attrs["realisation"] == 1
    claims = pd.read_csv(results / STUDY.claims)
    assert claims["verdict"].isin(VERDICTS).all()
    assert {"proteins.factored_beats_vanilla1.precision",
            "proteins.factored_as_vanilla3.heldout_loss",
            "proteins.factored_as_plmdca.precision", "proteins.vanilla1.converged",
            "proteins.vanilla3.converged"} <= set(claims["id"])
    gated = claims.set_index("id").loc["proteins.factored_as_vanilla3.heldout_loss", "gates"]
    assert gated == "proteins.fits_converged;proteins.vanilla3.converged"
    for panel in STUDY.panels:
        assert (results / "figures" / f"{panel.name}.png").stat().st_size > 0


def check_focus_lists(results) -> pd.DataFrame:
    """The shipped family's contact lists in the run in ``results``, numbered by its focus
    TFPI2_BOVIN/95-147 (a record that spans every column: residue 94 + c at column c): the
    letters are TFPI2's residues, and each pair's distance is that of its columns in the pairs
    table. Returns the lists' summary."""
    contacts = results / "proteins" / "contacts" / "PF00014_2000"
    tfpi2 = find_focus(PF00014 / "PF00014.fasta.gz", "TFPI2_BOVIN/95-147").residues
    pairs = pd.read_csv(results / "proteins" / "tables" / "pairs.csv")
    distance = dict(zip(zip(pairs["i"], pairs["j"], strict=True), pairs["distance"],
                        strict=True))
    summary = pd.read_csv(contacts / "summary.csv")
    for name in summary["list"]:
        table = pd.read_csv(contacts / name, sep="\t")
        assert list(table.columns) == [*COLUMNS, "distance", "contact"]
        assert table["i"].min() >= 95 and table["j"].max() <= 147
        for number, letter in (("i", "a_i"), ("j", "a_j")):
            assert list(table[letter]) == [tfpi2[n - 95] for n in table[number]], name
        np.testing.assert_allclose(
            table["distance"], [distance[i - 94, j - 94] for i, j in zip(table["i"], table["j"],
                                                                        strict=True)], rtol=1e-5)
        assert (table["contact"] == (table["distance"] < 8)).all()
    assert summary["P@L"].between(0, 1).all()
    assert (summary["numbering"] == "residues of the focus sequence TFPI2_BOVIN/95-147").all()
    return summary


def test_tiny_run_takes_away_contact_lists_numbered_by_the_focus(tiny_run):
    summary = check_focus_lists(tiny_run / "results")
    assert list(summary["list"]) == ["factored.tsv", "plmdca.tsv", "vanilla1.tsv",
                                     "vanilla1-jacobian.tsv", "vanilla3.tsv",
                                     "vanilla3-jacobian.tsv"]
    assert summary.loc[0, "configuration"] in ("factored-H2", "factored_softmax-H2")
    assert (summary["M"] == 2000).all()  # every sequence
    figure = tiny_run / "results" / "proteins" / "contacts" / "PF00014_2000" / "contact_map.png"
    assert figure.stat().st_size > 0


def _own_family(tmp_path) -> tuple[str, str]:
    """A user's A3M alignment (300 PF00014 sequences with insert states added) and a 3-column
    distance file of its columns."""
    aln = read_alignment(PF00014 / "PF00014.fasta.gz")
    lines = []
    for name, codes in zip(aln.names[:300], aln.seqs[:300], strict=True):
        seq = "".join(ALPHABET[k] for k in codes)
        lines += [f">{name}", seq[:10] + "kl." + seq[10:]]  # A3M inserts: dropped
    (tmp_path / "mine.a3m").write_text("\n".join(lines) + "\n")
    rows = [line.split() for line in (PF00014 / "PF00014_struct.dat").read_text().splitlines()]
    (tmp_path / "mine.dist").write_text(
        "".join(f"{int(float(r[0]))} {int(float(r[1]))} {float(r[3]):.2f}\n" for r in rows))
    return str(tmp_path / "mine.a3m"), str(tmp_path / "mine.dist")


@pytest.mark.slow
def test_a_users_own_alignment_end_to_end(tmp_path):
    alignment, distances = _own_family(tmp_path)
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({
        "results": str(tmp_path / "results"),
        "proteins": {"families": [{"name": "mine", "alignment": alignment,
                                   "distances": distances}],
                     "models": ["factored", "plmdca"], "heads": [1], "realisations": 2,
                     "restarts": 1, "max_iter": 20,
                     "final_fit": False}}))  # the contact lists' test runs the final fits
    run = snakemake(tmp_path, config, "proteins")
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    tables = tmp_path / "results" / "proteins" / "tables"
    families = pd.read_csv(tables / "families.csv")
    assert families.loc[0, "M_raw"] == 300 and families.loc[0, "L_raw"] == 53
    models = pd.read_csv(tables / "models.csv")
    assert set(models["model"]) == {"factored-H1", "plmdca"} and models["P@L"].between(0, 1).all()
    claims = pd.read_csv(tables / "claims.csv")
    assert list(claims["id"]) == ["proteins.factored_as_plmdca.precision",
                                  "proteins.factored_fewer_parameters", "proteins.fits_converged"]


@pytest.mark.slow
def test_a_family_without_a_structure_to_its_contact_lists_and_page(tmp_path):
    """300 PF00014 sequences and no distance file, one split: every model fitted on the split
    and once more on all 300 sequences (proteins.final_fit), the contact lists in plmc's six
    columns numbered by alignment column, and the results page saying the precision is
    unknown."""
    alignment, _ = _own_family(tmp_path)
    config = tmp_path / "nostruct.yaml"
    config.write_text(yaml.safe_dump({
        "results": str(tmp_path / "results"), "compute": {"threads": 1},
        "proteins": {"families": [{"name": "nostruct", "alignment": alignment}],
                     "models": ["factored", "plmdca", "vanilla1"], "heads": [1],
                     "realisations": 1, "restarts": 1, "max_iter": 20,
                     "transformer": {"steps": 10, "eval_every": 5, "window": 1, "model_dim": 8,
                                     "batch_size": 16}}}))
    run = snakemake(tmp_path, config, "proteins")
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    results = tmp_path / "results"
    family = results / "proteins" / "nostruct"
    data = read_artefact(family / "data.h5", PROTEIN_DATA)
    assert "distances" not in data.data and "residues" not in data.data
    for model, configuration in (("factored", "factored-H1"), ("plmdca", "plmdca"),
                                 ("vanilla1", "vanilla1")):
        split = read_artefact(family / "r0" / f"{configuration}.h5", PROTEIN_FIT)
        final = read_artefact(family / "final" / f"{model}.h5", PROTEIN_FINAL_FIT)
        assert final.attrs["configuration"] == configuration and final.attrs["M"] == 300
        assert final["scores"].shape == split["scores"].shape == (53, 53)
        assert not np.allclose(final["scores"], split["scores"])  # another fit: all sequences
    assert read_artefact(family / "final" / "vanilla1.h5").attrs["steps"] == read_artefact(
        family / "r0" / "vanilla1.h5").attrs["best_step"]
    contacts = results / "proteins" / "contacts" / "nostruct"
    pairs = pd.read_csv(results / "proteins" / "tables" / "pairs.csv")
    for name in ("factored", "plmdca", "vanilla1", "vanilla1-jacobian"):
        table = pd.read_csv(contacts / f"{name}.tsv", sep="\t", keep_default_na=False)
        assert list(table.columns) == list(COLUMNS)  # no distance or contact column
        assert (table["a_i"] == "-").all() and (table["a_j"] == "-").all()
        assert (table["0"] == 0).all() and (np.diff(table["score"]) <= 0).all()
        model = "factored-H1" if name == "factored" else name
        split = pairs[pairs["model"] == model]
        assert set(zip(table["i"], table["j"], strict=True)) == set(
            zip(split["i"], split["j"], strict=True))  # the pairs the study ranks, by column
    summary = pd.read_csv(contacts / "summary.csv")
    assert list(summary["list"]) == ["factored.tsv", "plmdca.tsv", "vanilla1.tsv",
                                     "vanilla1-jacobian.tsv"]
    assert summary["P@L"].isna().all() and (summary["contacts"] == NO_STRUCTURE).all()
    assert (summary["numbering"] == "alignment columns (1-based)").all()
    assert (contacts / "contact_map.png").stat().st_size > 0
    snap = tmp_path / "snap"
    assert snapshot(results, snap, STUDY, {})
    page = results_page(snap, STUDY, "nostruct")
    rows = [line for line in page.splitlines() if line.startswith("| nostruct |")]
    assert len(rows) == 4 and all(row.endswith(f"| {NO_STRUCTURE} |") for row in rows), rows
    assert "precision" not in " ".join(pd.read_csv(results / STUDY.claims)["id"])


GOOD = ">a\nACDEFGH\n>b\nACDEFGW\n"
# Each kind of bad input: (alignment bytes or None for a missing file, distance bytes, the file
# the error names, a fragment of the problem)
BAD_INPUTS = {
    "wrong_path": (None, None, "bad.fasta", "no such alignment file"),
    "truncated_gzip": (gzip.compress(GOOD.encode() * 50)[:-30], None, "bad.fasta",
                       "truncated or corrupt gzip file (Compressed file ended before the "
                       "end-of-stream marker was reached)"),
    "ragged": (b">a\nACDE\n>b\nACD\n", None, "bad.fasta", "record 2 ('b'): aligned length 3"),
    "illegal_character": (b">a\nACDE\n>b\nAC1E\n", None, "bad.fasta",
                          "record 2 ('b'): character '1'"),
    "empty": (b"", None, "bad.fasta", "no records (empty file)"),
    "non_numeric_distance": (GOOD.encode(), b"1 7 3.5\n2 6 far\n", "bad.dist",
                             "line 2: '2 6 far' is not 3 or 4 numbers"),
}


def _bad_family(tmp_path, kind: str) -> dict:
    """The family entry of one kind of bad input, its files written under ``tmp_path/kind``."""
    alignment, distances, _, _ = BAD_INPUTS[kind]
    folder = tmp_path / kind
    folder.mkdir()
    entry = {"name": kind, "alignment": str(folder / "bad.fasta")}
    if alignment is not None:
        (folder / "bad.fasta").write_bytes(alignment)
    if distances is not None:
        (folder / "bad.dist").write_bytes(distances)
        entry["distances"] = str(folder / "bad.dist")
    return entry


def test_check_config_gives_one_line_per_bad_input(tmp_path):
    families = [_bad_family(tmp_path, kind) for kind in BAD_INPUTS]
    (tmp_path / "good.fasta").write_text(GOOD)
    families.append({"name": "good", "alignment": str(tmp_path / "good.fasta")})
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"proteins": {"families": families}}))
    run = subprocess.run([sys.executable, "-m", "workflow_lib", "check-config", str(config)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    *lines, count = run.stderr.strip().splitlines()
    assert count == f"{len(BAD_INPUTS)} errors in {config}", run.stderr
    for line, (kind, (_, _, name, problem)) in zip(lines, BAD_INPUTS.items(), strict=True):
        assert line.startswith(f"error: proteins.families {kind!r}: "), line
        assert f"{tmp_path / kind / name}: " in line and problem in line, line
        assert "; " in line.split(problem)[-1]  # and what to do
    # the shipped files, named relative to the repository, from another folder
    presets = [str(ROOT / "config.yaml"), str(ROOT / "config" / "proteins_families.yaml")]
    run = subprocess.run([sys.executable, "-m", "workflow_lib", "check-config", *presets],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.endswith(": valid\n"), run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind", [kind for kind in BAD_INPUTS if kind != "wrong_path"])
def test_a_bad_input_stops_its_job_with_one_line(tmp_path, kind):
    """Every kind but the wrong path, which Snakemake reports before any job (and check-config
    before Snakemake)."""
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"results": str(tmp_path / "results"),
                                      "proteins": {"families": [_bad_family(tmp_path, kind)]}}))
    run = snakemake(tmp_path, config, "proteins")
    assert run.returncode != 0
    log = (tmp_path / "results" / "logs" / "proteins" / kind / "data.log").read_text()
    errors = [line for line in log.splitlines() if line.startswith("error: ")]
    _, _, name, problem = BAD_INPUTS[kind]
    assert len(errors) == 1 and f"{name}: " in errors[0], log
    assert problem in errors[0], errors[0]
    assert not (tmp_path / "results" / "proteins" / kind / "data.h5").exists()


def test_a_family_with_its_own_candidates_fits_those_alone(tmp_path):
    """A family whose entry sets ``heads`` and ``attention`` is fitted with those factored
    candidates alone, another with the section's; the final fit of factored attention reads its
    own family's split fits."""
    alignment = str(PF00014 / "PF00014.fasta.gz")
    config = tmp_path / "own.yaml"
    config.write_text(yaml.safe_dump({
        "results": str(tmp_path / "results"),
        "proteins": {"families": [{"name": "long", "alignment": alignment, "heads": [8],
                                   "attention": ["lowrank"]},
                                  {"name": "short", "alignment": alignment}],
                     "models": ["factored", "plmdca"], "heads": [1, 2], "attention": ["signed"],
                     "realisations": 1, "final_fit": True}}))
    run = snakemake(tmp_path, config, "-n", "proteins")
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    fits = set(re.findall(r"results/proteins/(\w+)/r0/([\w-]+)\.h5", run.stdout))
    assert fits == {("long", "factored_lowrank-H8"), ("long", "plmdca"),
                    ("short", "factored-H1"), ("short", "factored-H2"), ("short", "plmdca")}
    jobs = re.split(r"\n\[[^\]\n]+\]\n", run.stdout)  # each job's lines, after its time stamp
    final = [job for job in jobs if job.startswith("rule protein_final_fit")
             and "/long/final/factored.h5" in job]
    assert len(final) == 1 and "long/r0/factored_lowrank-H8.h5" in final[0], final
    assert "short/r0" not in final[0]
