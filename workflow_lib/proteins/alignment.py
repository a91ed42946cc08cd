"""Protein-family alignments: reading, a focus (reference) sequence and its residue numbers,
gap filtering, structural distances and held-out splits.

An alignment is an ``(M, L)`` int8 array of codes into ``ALPHABET`` (the 20 amino acids in
alphabetical one-letter order, then the gap, ``GAP = 20``, ``Q = 21`` states). The ambiguity
codes B, Z, X, J, U and O read as the gap, as in plmDCA. Any problem in a file raises
``AlignmentError`` with a one-line message naming the file, and the record or line.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workflow_lib.core.errors import ConfigError

ALPHABET = "ACDEFGHIKLMNPQRSTVWY-"
GAP = ALPHABET.index("-")
Q = len(ALPHABET)
AMBIGUOUS = "BZXJUO"

_INSERT = 253  # A3M insert state (lower-case letter or '.'): dropped
_INVALID = 255
_CODES = np.full(256, _INVALID, np.uint8)
for _code, _letter in enumerate(ALPHABET):
    _CODES[ord(_letter)] = _code
for _letter in AMBIGUOUS:
    _CODES[ord(_letter)] = GAP
for _letter in "abcdefghijklmnopqrstuvwxyz.":
    _CODES[ord(_letter)] = _INSERT


class AlignmentError(ConfigError):
    """An alignment or distance file is missing or malformed; the message is one line."""


@dataclass(frozen=True, eq=False)
class Alignment:
    """An aligned protein family as read from ``path``.

    ``names``: the ``M`` header lines (without '>'); ``seqs``: ``(M, L)`` int8 codes in
    ``ALPHABET`` order, read-only.
    """

    names: tuple[str, ...]
    seqs: np.ndarray
    path: str


def open_text(path: Path, kind: str) -> str:
    """The text of the ``kind`` file ``path`` (``"alignment"`` or ``"distance"``), gunzipped when
    it starts with the gzip magic bytes (latin-1, so that each byte is one character).

    Raises ``AlignmentError`` (one line: the file, the problem, what to do) for a missing or
    unreadable file and for a truncated or corrupt gzip stream.
    """
    if not path.is_file():
        raise AlignmentError(f"{path}: no such {kind} file; check the path (relative paths are "
                             "relative to the repository, the Snakefile's folder)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AlignmentError(f"{path}: cannot read the {kind} file ({exc.strerror}); check its "
                             "permissions") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise AlignmentError(f"{path}: truncated or corrupt gzip file ({exc}); copy or "
                                 "download it again, or give it uncompressed") from None
    return data.decode("latin-1")


def read_records(path: str | Path) -> list[tuple[str, str]]:
    """The records of a FASTA or A3M file, plain or gzipped: ``(header, text)`` each, the header
    without '>' and stripped, the text its sequence lines joined as written (every character
    kept). Comment lines starting with '#' before the first record are skipped (as in A3M files).
    Raises ``AlignmentError`` (one line) for a missing or unreadable file, a file with no records
    and one not starting with '>'."""
    path = Path(path)
    lines = open_text(path, "alignment").splitlines()
    start = 0
    while start < len(lines) and (not lines[start].strip() or lines[start].startswith("#")):
        start += 1
    if start == len(lines):
        raise AlignmentError(f"{path}: no records (empty file); give a gapped FASTA or A3M "
                             "alignment with one '>' header per sequence")
    if not lines[start].startswith(">"):
        raise AlignmentError(
            f"{path}: line {start + 1} starts with {lines[start][:1]!r}, expected '>' "
            "(not a FASTA/A3M file); give a gapped FASTA or A3M alignment"
        )
    records: list[tuple[str, list[str]]] = []
    for line in lines[start:]:
        if line.startswith(">"):
            records.append((line[1:].strip(), []))
        else:
            records[-1][1].append(line.strip())
    return [(name, "".join(chunk)) for name, chunk in records]


def read_alignment(path: str | Path) -> Alignment:
    """Read a gapped FASTA or A3M alignment, plain or gzipped (``read_records``).

    Sequences may span several lines. Upper-case letters and '-' are aligned columns (the
    ambiguity codes B, Z, X, J, U, O read as the gap); lower-case letters and '.' are A3M insert
    states and are dropped. Raises ``AlignmentError`` (one line: file, record name and 1-based
    number, problem) for a missing file, a file with no records or not starting with '>', a
    record with no aligned column, a record whose aligned length differs from the first record's,
    or a character outside these (with its 1-based column in the record's sequence as written).
    """
    path = Path(path)
    names, rows = [], []
    for number, (name, text) in enumerate(read_records(path), start=1):
        where = f"{path}: record {number} ({name!r})"
        codes = _CODES[np.frombuffer(text.encode("latin-1"), np.uint8)]
        bad = np.flatnonzero(codes == _INVALID)
        if bad.size:
            raise AlignmentError(
                f"{where}: character {text[bad[0]]!r} at column {bad[0] + 1} is not an amino "
                f"acid, gap, ambiguity code ({AMBIGUOUS}) or insert state (lower case, '.'); "
                "fix or drop the record"
            )
        codes = codes[codes != _INSERT]
        if codes.size == 0:
            raise AlignmentError(f"{where}: empty sequence (no aligned column); drop the "
                                 "record")
        if rows and codes.size != rows[0].size:
            raise AlignmentError(
                f"{where}: aligned length {codes.size} differs from the first record's "
                f"{rows[0].size}; every record must have the same aligned columns (upper case "
                "and '-'): realign or drop it"
            )
        names.append(name)
        rows.append(codes)
    seqs = np.stack(rows).astype(np.int8)
    seqs.flags.writeable = False
    return Alignment(names=tuple(names), seqs=seqs, path=str(path))


@dataclass(frozen=True, eq=False)
class Focus:
    """The focus (reference) sequence of an alignment, as plmc's ``-f``.

    ``name``: its header's first word; ``record``: its 0-based record number; ``start``: the
    residue number of its first residue (``START`` of a name ``NAME/START-END``, else 1);
    ``residues``: its residues in order as written, upper-cased (aligned and insert states
    alike: residue ``start + k`` is ``residues[k]``); ``numbers: (L_raw,)`` int, per aligned
    column the residue number of its residue there (0 at a gap); ``columns: (L_raw,)`` bool, the
    aligned columns where it has one of the 20 amino acids in upper case: the model's columns.
    """

    name: str
    record: int
    start: int
    residues: str
    numbers: np.ndarray
    columns: np.ndarray


REGION = re.compile(r"/(\d+)-(\d+)$")  # a name's residue range, NAME/START-END


def find_focus(path: str | Path, focus: str) -> Focus:
    """The record ``focus`` of the alignment ``path`` (``Focus``): the one whose header's first
    word is ``focus`` or starts with ``focus`` followed by ``/START-END``.

    Residues are the letters of the record's text (upper case: aligned; lower case: A3M insert
    states, counted in the numbering though not aligned; '-' and '.' are no residue), numbered
    from the name's ``START`` (else 1). Raises ``AlignmentError`` (one line: the file, the focus,
    the problem, what to do) when no record or several match, when the name's range ``START-END``
    holds another number of residues than the text (residues dropped from the file: the numbers
    would be wrong) and when the record has no amino acid in an aligned column. Call it on a file
    ``read_alignment`` reads."""
    path = Path(path)
    records = read_records(path)
    words = [name.split()[0] if name.split() else "" for name, _ in records]
    found = [k for k, word in enumerate(words) if word == focus or word.startswith(focus + "/")]
    where = f"{path}: focus {focus!r}"
    if not found:
        raise AlignmentError(f"{where}: no record of that name (the header's first word, with "
                             f"or without its /START-END); name one, e.g. {words[0]!r}, or leave "
                             "out focus to number residues by alignment column")
    if len(found) > 1:
        names = ", ".join(repr(words[k]) for k in found[:3])
        raise AlignmentError(f"{where}: {len(found)} records match ({names}"
                             f"{', ...' if len(found) > 3 else ''}); give the whole name, with "
                             "its /START-END")
    record, text = found[0], records[found[0]][1]
    region = REGION.search(words[record])
    start = int(region[1]) if region else 1
    residues = "".join(char.upper() for char in text if char.isalpha())
    if region and start + len(residues) - 1 != int(region[2]):
        raise AlignmentError(
            f"{where}: the record holds {len(residues)} residues but its name spans "
            f"{region[1]}-{region[2]} ({int(region[2]) - start + 1}): residues were dropped from "
            "the file (insert states), so numbering from its START would be wrong; name another "
            "record, or leave out focus to number residues by alignment column")
    numbers, columns, count = [], [], 0
    for char in text:
        if char.isupper() or char == "-":  # an aligned column
            numbers.append(start + count if char.isalpha() else 0)
            columns.append(char in ALPHABET[:GAP])
        count += char.isalpha()
    if not any(columns):
        raise AlignmentError(f"{where}: the record has no amino acid in an aligned column; name "
                             "another record")
    return Focus(words[record], record, start, residues, np.array(numbers), np.array(columns))


def alignment_size(path: str | Path) -> tuple[int, int]:
    """``(M, L)`` of a gapped FASTA or A3M alignment, plain or gzipped, without parsing it: the
    number of '>' headers and the aligned columns of the first record (upper-case letters and
    '-'). Cheap enough to call while Snakemake plans the jobs; upper bounds of the sizes after
    the gap filter. Raises ``AlignmentError`` (one line) for the problems ``read_alignment``
    reports on opening, and for a file without records."""
    path = Path(path)
    lines = open_text(path, "alignment").splitlines()
    headers = [number for number, line in enumerate(lines) if line.startswith(">")]
    if not headers:
        raise AlignmentError(f"{path}: no records (no '>' header); give a gapped FASTA or A3M "
                             "alignment with one '>' header per sequence")
    end = headers[1] if len(headers) > 1 else len(lines)
    first = "".join(lines[headers[0] + 1 : end]).strip()
    return len(headers), sum(char.isupper() or char == "-" for char in first)


def filter_gaps(
    seqs: np.ndarray, max_gap_sequence: float, max_gap_column: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop gappy columns, then gappy sequences, of ``seqs: (M, L)`` (codes, gap ``GAP``).

    Columns whose gap fraction over all ``M`` sequences exceeds ``max_gap_column`` go first;
    then sequences whose gap fraction over the kept columns exceeds ``max_gap_sequence``.
    Returns ``(filtered: (M', L'), rows: (M',), columns: (L',))``, the kept row and column
    indices increasing. Raises ``ValueError`` when a threshold is outside [0, 1] or when no
    column or no sequence is left.
    """
    seqs = np.asarray(seqs)
    for key, value in (("max_gap_sequence", max_gap_sequence), ("max_gap_column", max_gap_column)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{key} = {value} is outside [0, 1]")
    gaps = seqs == GAP
    columns = np.flatnonzero(gaps.mean(axis=0) <= max_gap_column)
    if columns.size == 0:
        raise ValueError(
            f"filter_gaps: every one of the {seqs.shape[1]} columns has a gap fraction above "
            f"max_gap_column = {max_gap_column}"
        )
    rows = np.flatnonzero(gaps[:, columns].mean(axis=1) <= max_gap_sequence)
    if rows.size == 0:
        raise ValueError(
            f"filter_gaps: every one of the {seqs.shape[0]} sequences has a gap fraction above "
            f"max_gap_sequence = {max_gap_sequence} over the {columns.size} kept columns"
        )
    return seqs[np.ix_(rows, columns)], rows, columns


def read_distances(path: str | Path, L: int) -> np.ndarray:
    """``(L, L)`` float64 distances (Å) between alignment columns, read from ``path``.

    Plain or gzipped; each non-blank line is ``i j x d`` (ArDCAData ``*_struct.dat``: the
    distance in column 4, column 3 ignored) or ``i j d`` (DataAttentionDCA
    ``Atomic_distances_*.dat`` and ``*_struct_struct.dat``), with 1-based column indices ``i, j``
    (written as integers or integer-valued floats). The matrix is symmetric, NaN for pairs the
    file does not give and on the diagonal; a pair given more than once keeps its smallest
    distance. Raises ``AlignmentError`` naming the file and line for a missing or empty file, a
    line that is not 3 or 4 numbers or has a negative or non-finite distance, or an index outside
    1..L.
    """
    path = Path(path)
    text = open_text(path, "distance")
    distances = np.full((L, L), np.nan)
    found = False
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path}: line {number}"
        try:
            values = [float(field) for field in fields]
        except ValueError:
            raise AlignmentError(f"{where}: {line.strip()!r} is not 3 or 4 numbers; give "
                                 "'i j d' or 'i j x d' per line") from None
        if len(values) not in (3, 4):
            raise AlignmentError(
                f"{where}: {len(values)} columns, expected 3 (i j d) or 4 (i j x d); fix the "
                "line"
            )
        i, j, d = values[0], values[1], values[-1]
        for index in (i, j):
            if index != int(index) or not 1 <= index <= L:
                raise AlignmentError(f"{where}: index {index:g} is not an integer in 1..{L}; "
                                     "number the alignment's columns from 1")
        if not (np.isfinite(d) and d >= 0):
            raise AlignmentError(f"{where}: distance {d:g} is not a finite number >= 0; "
                                 "fix or drop the line")
        a, b = int(i) - 1, int(j) - 1
        distances[a, b] = distances[b, a] = np.fmin(distances[a, b], d)
        found = True
    if not found:
        raise AlignmentError(f"{path}: no distances (empty file); give one 'i j d' line per "
                             "residue pair, or leave the family's distances out")
    np.fill_diagonal(distances, np.nan)
    return distances


def check_families(families: list[dict], root: str | Path) -> list[str]:
    """Open every alignment and distance file of ``proteins.families`` and parse it whole
    (``read_alignment``, ``find_focus`` of a family's ``focus``, ``read_distances`` with the
    alignment's L): one line per problem, in the order of the list, empty when every file reads.
    Relative paths are taken from ``root``."""
    problems = []
    for family in families:
        where = f"proteins.families {family['name']!r}"
        try:
            L = read_alignment(Path(root, family["alignment"])).seqs.shape[1]
        except AlignmentError as exc:
            problems.append(f"{where}: {exc}")
            L = None
        if L is not None and "focus" in family:
            try:
                find_focus(Path(root, family["alignment"]), family["focus"])
            except AlignmentError as exc:
                problems.append(f"{where}: {exc}")
        if "distances" in family:
            try:
                if L is None:  # the indices cannot be checked without L: read the text only
                    open_text(Path(root, family["distances"]), "distance")
                else:
                    read_distances(Path(root, family["distances"]), L)
            except AlignmentError as exc:
                problems.append(f"{where}: {exc}")
    return problems


def split_held_out(M: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic ``(train: (M - n,), test: (n,))`` row indices, each sorted, disjoint.

    ``n = round(fraction * M)``, clipped to ``1..M-1`` when ``M >= 2`` (so each part holds a
    row) and 0 when ``M == 1``; the rows are ``numpy.random.default_rng(seed).permutation(M)``,
    the first ``n`` held out. Raises ``ValueError`` for ``M < 1`` or ``fraction`` outside (0, 1).
    """
    if M < 1:
        raise ValueError(f"split_held_out: M = {M}, expected at least 1 sequence")
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"split_held_out: fraction = {fraction} is outside (0, 1)")
    n_test = min(max(round(fraction * M), 1), M - 1)
    order = np.random.default_rng(seed).permutation(M)
    return np.sort(order[n_test:]), np.sort(order[:n_test])
