"""Protein alignments: reading FASTA/A3M and its one-line errors, gap filtering, distances,
held-out splits, sequence weights, and the shipped families' data (data/proteins/)."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from workflow_lib.proteins.alignment import (
    ALPHABET,
    GAP,
    AlignmentError,
    filter_gaps,
    read_alignment,
    read_distances,
    split_held_out,
)
from workflow_lib.proteins.weights import neighbour_counts, sequence_weights

DATA = ROOT / "data" / "proteins"


def encode(*rows: str) -> np.ndarray:
    """``(len(rows), L)`` int8 codes of equal-length strings over ``ALPHABET``."""
    return np.array([[ALPHABET.index(c) for c in row] for row in rows], np.int8)


def test_weights_by_hand():
    seqs = encode("ACDEF", "ACDEG", "ACD-G", "ACD--")
    # identity 0.8 of L = 5 means at least 4 identical columns, gaps included:
    # 1-2: ACD + E = 4, 1-3: ACD = 3, 1-4: ACD = 3,
    # 2-3: ACD + G = 4, 2-4: ACD = 3, 3-4: ACD + gap = 4.
    # Neighbours (self included): 1 -> {1, 2}, 2 -> {1, 2, 3}, 3 -> {2, 3, 4}, 4 -> {3, 4},
    # so the weights are 1/2, 1/3, 1/3, 1/2 and M_eff = 5/3.
    weights = sequence_weights(seqs, identity=0.8)
    assert weights.dtype == np.float64 and weights.shape == (4,)
    np.testing.assert_allclose(weights, [1 / 2, 1 / 3, 1 / 3, 1 / 2])
    assert weights.sum() == pytest.approx(5 / 3)
    # at identity 1 only identical sequences count
    np.testing.assert_array_equal(sequence_weights(seqs, identity=1.0), np.ones(4))


def test_blocked_weights_match_one_block_and_brute_force():
    seqs = np.random.default_rng(3).integers(0, 3, size=(37, 9)).astype(np.int8)
    identity = (seqs[:, None, :] == seqs[None, :, :]).mean(axis=-1)
    expected = 1 / (identity >= 0.6).sum(axis=1)
    blocked = sequence_weights(seqs, identity=0.6, block=5)  # 8 blocks, 3 padding rows
    np.testing.assert_array_equal(blocked, sequence_weights(seqs, identity=0.6, block=64))
    np.testing.assert_array_equal(blocked, expected)
    assert blocked.min() < 1  # the test has neighbours to count


def test_neighbour_counts_between_two_sets_by_hand():
    queries = np.array([[0, 1, 2, 3, 4], [5, 5, 5, 5, 5]], np.int8)
    references = np.array([[0, 1, 2, 3, 0],    # 4 of 5 columns equal to query 0
                           [0, 1, 2, 0, 0],    # 3 of 5
                           [5, 5, 5, 5, 5]], np.int8)  # equal to query 1
    np.testing.assert_array_equal(neighbour_counts(queries, references, 0.8), [1, 1])
    np.testing.assert_array_equal(neighbour_counts(queries, references, 0.6), [2, 1])
    with pytest.raises(ValueError, match="lengths 5 and 4 differ"):
        neighbour_counts(queries, references[:, :4])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("", ["no records"]),
        ("\n\n", ["no records"]),
        ("ACD\n>a\nACD\n", ["line 1", "expected '>'"]),
        (">a\nACD\n>b\n\n>c\nACD\n", ["record 2 ('b')", "empty sequence"]),
        (">a\nACD\n>b\nac.\n", ["record 2 ('b')", "empty sequence"]),
        (">a\nACD\n>b\nACD\n>c x\nAC\n", ["record 3 ('c x')", "length 2", "first record's 3"]),
        (">a\nACD\n>b\nA*D\n", ["record 2 ('b')", "'*' at column 2"]),
        (">a\nAC1\n", ["record 1 ('a')", "'1' at column 3"]),
    ],
)
def test_a_bad_alignment_gives_one_line(tmp_path, text, fragments):
    path = write(tmp_path, "bad.fasta", text)
    with pytest.raises(AlignmentError) as error:
        read_alignment(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}:")
    for fragment in fragments:
        assert fragment in message


def test_a_missing_alignment_names_the_file(tmp_path):
    with pytest.raises(AlignmentError, match="nowhere.fasta: no such alignment file"):
        read_alignment(tmp_path / "nowhere.fasta")


def test_fasta_a3m_and_gzip_read_the_same_columns(tmp_path):
    fasta = ">one desc\nAC-D\n>two\nAC\nDD\n"
    a3m = "#A3M header\n>one desc\nAkkC-.D\n>two\nACdd\nDD\n"
    expected = encode("AC-D", "ACDD")
    plain = read_alignment(write(tmp_path, "x.fasta", fasta))
    inserts = read_alignment(write(tmp_path, "x.a3m", a3m))
    zipped = tmp_path / "x.fasta.gz"
    zipped.write_bytes(gzip.compress(fasta.encode()))
    for alignment in (plain, inserts, read_alignment(zipped)):
        assert alignment.names == ("one desc", "two")
        assert alignment.seqs.dtype == np.int8
        np.testing.assert_array_equal(alignment.seqs, expected)
    assert read_alignment(zipped).path == str(zipped)


def test_ambiguity_codes_read_as_gaps(tmp_path):
    alignment = read_alignment(write(tmp_path, "x.fasta", ">a\nABZXJUO-Y\n"))
    np.testing.assert_array_equal(alignment.seqs[0], [0] + [GAP] * 7 + [ALPHABET.index("Y")])


def test_filter_gaps_by_hand():
    seqs = encode("A-AA", "A-A-", "A---", "AAAA")
    # column gap fractions 0, 3/4, 1/4, 1/2: at most 1/2 keeps columns 0, 2, 3;
    # row gap fractions over them 0, 1/3, 2/3, 0: at most 1/2 keeps rows 0, 1, 3.
    filtered, rows, columns = filter_gaps(seqs, max_gap_sequence=0.5, max_gap_column=0.5)
    np.testing.assert_array_equal(rows, [0, 1, 3])
    np.testing.assert_array_equal(columns, [0, 2, 3])
    np.testing.assert_array_equal(filtered, encode("AAA", "AA-", "AAA"))
    with pytest.raises(ValueError, match="every one of the 2 columns"):
        filter_gaps(encode("--", "--"), 1.0, 0.5)
    with pytest.raises(ValueError, match="every one of the 2 sequences"):
        filter_gaps(encode("A-", "-A"), 0.4, 1.0)


def test_read_distances_in_both_formats(tmp_path):
    four = write(tmp_path, "x_struct.dat", "1.0e+00 2.0e+00 -0.3 3.5\n2 4 0.1 7.25\n\n")
    three = write(tmp_path, "x.dist", "1 3 4.0\n4 3 6.5\n1 3 5.0\n")
    d4 = read_distances(four, 4)
    assert d4.shape == (4, 4)
    assert (d4[0, 1], d4[1, 0], d4[1, 3], d4[3, 1]) == (3.5, 3.5, 7.25, 7.25)
    assert np.isnan(d4).sum() == 16 - 4
    d3 = read_distances(three, 4)
    assert (d3[0, 2], d3[2, 3]) == (4.0, 6.5)  # the smaller of the two (1, 3) distances
    for d in (d3, d4):
        np.testing.assert_array_equal(d, d.T)
        assert np.isnan(np.diag(d)).all()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1 2 3.0\n1 5 0.0 3.0\n", "line 2: index 5 is not an integer in 1..4"),
        ("0 2 3.0\n", "line 1: index 0 is not an integer in 1..4"),
        ("1 2\n", "line 1: 2 columns"),
        ("1 2 x 3.0\n", "line 1: '1 2 x 3.0' is not 3 or 4 numbers"),
        ("1 2 -3.0\n", "line 1: distance -3"),
        ("\n", "no distances"),
    ],
)
def test_a_bad_distance_line_gives_one_line(tmp_path, text, fragment):
    path = write(tmp_path, "bad.dat", text)
    with pytest.raises(AlignmentError) as error:
        read_distances(path, 4)
    assert str(error.value).startswith(f"{path}: {fragment}")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("family", "M", "L", "struct", "columns"), [
    ("PF00014", 2000, 53, "PF00014_struct.dat", 4), ("PF00595", 3000, 82, "PF00595_struct.dat", 4),
    ("PF00677", 3000, 87, "Atomic_distances_PF00677.dat", 3),
    ("PF00684", 3000, 66, "Atomic_distances_PF00684.dat", 3),
    ("PF00035", 3000, 67, "Atomic_distances_PF00035.dat", 3),
    ("PF00763", 3000, 116, "Atomic_distances_PF00763.dat", 3),
    ("PF02953", 3000, 64, "PF02953_struct_struct.dat", 3),
    ("PF00200", 3000, 76, "PF00200_struct_struct.dat", 3),
    ("PF01774", 3000, 213, "PF01774_struct_struct.dat", 3),
    ("PF07648", 3000, 49, "PF07648_struct_struct.dat", 3),
    ("PF13354", 7515, 202, "PF13354_struct.dat.gz", 4)])
def test_the_shipped_families_read(family, M, L, struct, columns):
    """Each shipped alignment has its README's size in the 21-letter alphabet; its distance file
    has the README's number of columns on every line, a distance for nearly every pair (over 90%;
    PF01774's 83%, every pair of 194 of its 213 columns), and adjacent columns at the peptide
    bond's 1.3 Å (a minimum inter-atomic distance, the presets' ``distance_kind``)."""
    alignment = read_alignment(DATA / family / f"{family}.fasta.gz")
    assert alignment.seqs.shape == (M, L) and len(alignment.names) == M
    assert 0 <= alignment.seqs.min() and alignment.seqs.max() <= GAP
    text = (DATA / family / struct).read_bytes()
    lines = (gzip.decompress(text) if struct.endswith(".gz") else text).decode().splitlines()
    assert {len(line.split()) for line in lines} == {columns}
    distances = read_distances(DATA / family / struct, L)
    off_diagonal = distances[~np.eye(L, dtype=bool)]
    assert np.isfinite(off_diagonal).mean() > (0.8 if family == "PF01774" else 0.9)
    assert 1.2 < np.nanmedian(np.diag(distances, 1)) < 1.4


def test_split_held_out_is_deterministic_and_disjoint():
    train, test = split_held_out(100, 0.2, seed=7)
    again = split_held_out(100, 0.2, seed=7)
    np.testing.assert_array_equal(train, again[0])
    np.testing.assert_array_equal(test, again[1])
    assert len(test) == 20 and len(train) == 80
    assert np.intersect1d(train, test).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(100))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    assert not np.array_equal(split_held_out(100, 0.2, seed=8)[1], test)
    for fraction in (0.01, 0.99):  # each part keeps a row
        small_train, small_test = split_held_out(2, fraction, seed=0)
        assert len(small_train) == len(small_test) == 1


def test_the_shipped_files_are_those_of_the_readme():
    """Every file of data/proteins/ has the size and sha256 its README gives, and no file goes
    without a row."""
    readme = (DATA / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \|.*\| (\d+) \| `([0-9a-f]{64})` \|$", readme, re.M)
    shipped = {str(f.relative_to(DATA)) for f in DATA.rglob("*") if f.is_file()} - {"README.md"}
    assert {name for name, _, _ in rows} == shipped
    for name, size, sha256 in rows:
        data = (DATA / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (int(size), sha256), name
