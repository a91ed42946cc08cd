"""Write the shipped protein data of ``data/proteins/`` from clones of pagnani/ArDCAData and
francescocaredda/DataAttentionDCA, or subsample an alignment of your own the same way.

Usage:

- ``python scripts/make_protein_data.py shipped ARDCADATA_GIT_DIR DATAATTENTIONDCA_GIT_DIR
  [--out DIR]``, each a clone (bare or not) of https://github.com/pagnani/ArDCAData and
  https://github.com/francescocaredda/DataAttentionDCA; files are read from its ``HEAD`` with
  ``git show``. ``DIR`` defaults to ``data/proteins`` of the repository.
- ``python scripts/make_protein_data.py subsample ALIGNMENT OUT --size N [--seed S]``: ``N``
  records of the FASTA file ``ALIGNMENT`` (plain or gzipped) drawn as the shipped subsamples are
  (below; ``S`` defaults to 0), written gzipped to ``OUT``; prints the records kept of the total
  and the sha256 of ``OUT``.

The shipped files:

- ``PF00014/PF00014.fasta.gz``: 2000 records of ArDCAData's
  ``data/PF00014/PF00014_mgap6.fasta.gz`` chosen by
  ``numpy.random.default_rng(0).choice(M, 2000, replace=False)``, written in their original order
  (record text unchanged), gzip with an empty file name and ``mtime=0`` so the bytes are
  reproducible.
- ``PF00595/PF00595.fasta.gz``: 3000 records of ArDCAData's ``data/PF00595/PF00595_mgap6.fasta.gz``,
  and ``PF00677/PF00677.fasta.gz``, ``PF00684/PF00684.fasta.gz``, ``PF00035/PF00035.fasta.gz``,
  ``PF00763/PF00763.fasta.gz``: 3000 records of DataAttentionDCA's
  ``data/PFxxxxx/PFxxxxx_full.fasta``, and ``PF02953/PF02953.fasta.gz``,
  ``PF00200/PF00200.fasta.gz``, ``PF01774/PF01774.fasta.gz``, ``PF07648/PF07648.fasta.gz``: 3000
  records of its ``data/PFxxxxx/PFxxxxx.fasta``, drawn the same way (``default_rng(0)``).
- ``PF13354/PF13354_struct.dat.gz``: ArDCAData's ``data/PF13354/PF13354_struct.dat`` gzipped the
  same way (2.0 MB of text, 0.7 MB compressed).
- ``PF00014/PF00014_struct.dat``, ``PF00595/PF00595_struct.dat``, ``PF13354/PF13354.fasta.gz`` (from
  ``PF13354_wo_ref_seqs.fasta.gz``), ``LICENSE.txt`` (ArDCAData's ``LICENSE``), and
  ``PF00677/Atomic_distances_PF00677.dat``, ``PF00684/Atomic_distances_PF00684.dat``,
  ``PF00035/Atomic_distances_PF00035.dat``, ``PF00763/Atomic_distances_PF00763.dat``,
  ``PF02953/PF02953_struct_struct.dat``, ``PF00200/PF00200_struct_struct.dat``,
  ``PF01774/PF01774_struct_struct.dat``, ``PF07648/PF07648_struct_struct.dat``,
  ``LICENSE-DataAttentionDCA.txt`` (DataAttentionDCA's ``LICENSE``): copied as is.

The commit hashes and the sha256 of every written file are printed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import subprocess
from pathlib import Path

import numpy as np

from workflow_lib.proteins.alignment import AlignmentError, open_text

SUBSAMPLE_SEED = 0
# (repository, source path, target path, records kept)
SUBSAMPLES = (
    ("ardca", "data/PF00014/PF00014_mgap6.fasta.gz", "PF00014/PF00014.fasta.gz", 2000),
    ("ardca", "data/PF00595/PF00595_mgap6.fasta.gz", "PF00595/PF00595.fasta.gz", 3000),
    ("attention", "data/PF00677/PF00677_full.fasta", "PF00677/PF00677.fasta.gz", 3000),
    ("attention", "data/PF00684/PF00684_full.fasta", "PF00684/PF00684.fasta.gz", 3000),
    ("attention", "data/PF00035/PF00035_full.fasta", "PF00035/PF00035.fasta.gz", 3000),
    ("attention", "data/PF00763/PF00763_full.fasta", "PF00763/PF00763.fasta.gz", 3000),
    ("attention", "data/PF02953/PF02953.fasta", "PF02953/PF02953.fasta.gz", 3000),
    ("attention", "data/PF00200/PF00200.fasta", "PF00200/PF00200.fasta.gz", 3000),
    ("attention", "data/PF01774/PF01774.fasta", "PF01774/PF01774.fasta.gz", 3000),
    ("attention", "data/PF07648/PF07648.fasta", "PF07648/PF07648.fasta.gz", 3000),
)
GZIPPED = (("ardca", "data/PF13354/PF13354_struct.dat", "PF13354/PF13354_struct.dat.gz"),)
COPIES = (
    ("ardca", "data/PF00014/PF00014_struct.dat", "PF00014/PF00014_struct.dat"),
    ("ardca", "data/PF00595/PF00595_struct.dat", "PF00595/PF00595_struct.dat"),
    ("ardca", "data/PF13354/PF13354_wo_ref_seqs.fasta.gz", "PF13354/PF13354.fasta.gz"),
    ("ardca", "LICENSE", "LICENSE.txt"),
    ("attention", "data/PF00677/Atomic_distances_PF00677.dat",
     "PF00677/Atomic_distances_PF00677.dat"),
    ("attention", "data/PF00684/Atomic_distances_PF00684.dat",
     "PF00684/Atomic_distances_PF00684.dat"),
    ("attention", "data/PF00035/Atomic_distances_PF00035.dat",
     "PF00035/Atomic_distances_PF00035.dat"),
    ("attention", "data/PF00763/Atomic_distances_PF00763.dat",
     "PF00763/Atomic_distances_PF00763.dat"),
    ("attention", "data/PF02953/PF02953_struct_struct.dat", "PF02953/PF02953_struct_struct.dat"),
    ("attention", "data/PF00200/PF00200_struct_struct.dat", "PF00200/PF00200_struct_struct.dat"),
    ("attention", "data/PF01774/PF01774_struct_struct.dat", "PF01774/PF01774_struct_struct.dat"),
    ("attention", "data/PF07648/PF07648_struct_struct.dat", "PF07648/PF07648_struct_struct.dat"),
    ("attention", "LICENSE", "LICENSE-DataAttentionDCA.txt"),
)


def git_show(git_dir: Path, path: str) -> bytes:
    """The bytes of ``path`` at ``HEAD`` of the repository ``git_dir``."""
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout


def fasta_records(text: str) -> list[str]:
    """The records of a FASTA text, each its header line and sequence lines as they stand."""
    chunks = text.split("\n>")
    return [chunk if i == 0 else ">" + chunk for i, chunk in enumerate(chunks)]


def subsample(fasta: bytes, size: int, seed: int) -> bytes:
    """``size`` records of a FASTA file (plain or gzipped) drawn without replacement with
    ``default_rng(seed)``, kept in their original order, gzipped reproducibly (no file name,
    ``mtime=0``)."""
    if fasta[:2] == b"\x1f\x8b":
        fasta = gzip.decompress(fasta)
    records = fasta_records(fasta.decode().rstrip("\n"))
    keep = np.sort(np.random.default_rng(seed).choice(len(records), size, replace=False))
    return gzip_bytes(("\n".join(records[i] for i in keep) + "\n").encode())


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzipped reproducibly: no file name, ``mtime=0``."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as out:
        out.write(data)
    return buffer.getvalue()


def write_shipped(ardca: Path, attention: Path, out: Path) -> None:
    """Read the two repositories and write the shipped files under ``out``."""
    repos = {"ardca": ardca, "attention": attention}
    for name, git_dir in repos.items():
        commit = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"],
                                check=True, capture_output=True, text=True).stdout.strip()
        print(f"{name}: commit {commit}")
    outputs = {target: subsample(git_show(repos[repo], source), size, SUBSAMPLE_SEED)
               for repo, source, target, size in SUBSAMPLES}
    outputs |= {target: gzip_bytes(git_show(repos[repo], source))
                for repo, source, target in GZIPPED}
    outputs |= {target: git_show(repos[repo], source) for repo, source, target in COPIES}
    for target, data in outputs.items():
        path = out / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{hashlib.sha256(data).hexdigest()}  {target}  ({len(data)} bytes)")


def write_subsample(alignment: Path, out: Path, size: int, seed: int) -> None:
    """Write ``size`` records of ``alignment`` to ``out`` (gzipped, atomically); exit with one
    line when the file cannot be read or holds fewer records."""
    try:  # plain or gzipped, read as the workflow reads an alignment
        fasta = open_text(alignment, "alignment").encode("latin-1")
    except AlignmentError as error:
        raise SystemExit(str(error)) from None
    total = len(fasta_records(fasta.decode().rstrip("\n")))
    if not 0 < size <= total:
        raise SystemExit(f"--size {size}: {alignment} holds {total} records; give a size "
                         f"from 1 to {total}")
    data = subsample(fasta, size, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    partial.write_bytes(data)
    partial.replace(out)
    print(f"{size} of {total} records (seed {seed}) -> {out}  sha256 "
          f"{hashlib.sha256(data).hexdigest()}")


def main(argv: list[str] | None = None) -> None:
    """Run the subcommand given on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    shipped = commands.add_parser("shipped", help="write the shipped files of data/proteins")
    shipped.add_argument("ardca", type=Path, help="clone of pagnani/ArDCAData (bare or not)")
    shipped.add_argument("attention", type=Path,
                         help="clone of francescocaredda/DataAttentionDCA (bare or not)")
    shipped.add_argument("--out", type=Path,
                         default=Path(__file__).resolve().parents[1] / "data" / "proteins")
    own = commands.add_parser("subsample", help="subsample an alignment of your own")
    own.add_argument("alignment", type=Path, help="FASTA alignment, plain or gzipped")
    own.add_argument("out", type=Path, help="the subsample, written gzipped")
    own.add_argument("--size", type=int, required=True, help="records to keep")
    own.add_argument("--seed", type=int, default=SUBSAMPLE_SEED)
    args = parser.parse_args(argv)
    if args.command == "shipped":
        write_shipped(args.ardca, args.attention, args.out)
    else:
        write_subsample(args.alignment, args.out, args.size, args.seed)


if __name__ == "__main__":
    main()
