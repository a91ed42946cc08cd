"""Write the shipped protein data of ``data/proteins/`` from a clone of pagnani/ArDCAData.

Usage: ``python data/proteins/make_subsample.py ARDCADATA_GIT_DIR [--out DIR]``, where
``ARDCADATA_GIT_DIR`` is a clone (bare or not) of https://github.com/pagnani/ArDCAData; files are
read from its ``HEAD`` with ``git show``. ``DIR`` defaults to the folder of this script.

- ``PF00014/PF00014.fasta.gz``: 2000 records of ``data/PF00014/PF00014_mgap6.fasta.gz`` chosen by
  ``numpy.random.default_rng(0).choice(M, 2000, replace=False)``, written in their original order
  (record text unchanged), gzip with an empty file name and ``mtime=0`` so the bytes are
  reproducible.
- ``PF13354/PF13354_struct.dat.gz``: ``data/PF13354/PF13354_struct.dat`` gzipped the same way
  (2.0 MB of text, 0.7 MB compressed).
- ``PF00014/PF00014_struct.dat``, ``PF13354/PF13354.fasta.gz`` (from
  ``PF13354_wo_ref_seqs.fasta.gz``) and ``LICENSE.txt`` (from ``LICENSE``): copied as is.

The commit hash and the sha256 of every written file are printed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import subprocess
from pathlib import Path

import numpy as np

SUBSAMPLE_SIZE = 2000
SUBSAMPLE_SEED = 0
SUBSAMPLE = ("data/PF00014/PF00014_mgap6.fasta.gz", "PF00014/PF00014.fasta.gz")
GZIPPED = ("data/PF13354/PF13354_struct.dat", "PF13354/PF13354_struct.dat.gz")
COPIES = (
    ("data/PF00014/PF00014_struct.dat", "PF00014/PF00014_struct.dat"),
    ("data/PF13354/PF13354_wo_ref_seqs.fasta.gz", "PF13354/PF13354.fasta.gz"),
    ("LICENSE", "LICENSE.txt"),
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


def subsample(fasta_gz: bytes, size: int, seed: int) -> bytes:
    """``size`` records of a gzipped FASTA drawn without replacement with ``default_rng(seed)``,
    kept in their original order, gzipped reproducibly (no file name, ``mtime=0``)."""
    records = fasta_records(gzip.decompress(fasta_gz).decode().rstrip("\n"))
    keep = np.sort(np.random.default_rng(seed).choice(len(records), size, replace=False))
    return gzip_bytes(("\n".join(records[i] for i in keep) + "\n").encode())


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzipped reproducibly: no file name, ``mtime=0``."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as out:
        out.write(data)
    return buffer.getvalue()


def main() -> None:
    """Read the repository given on the command line and write the shipped files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path, help="clone of pagnani/ArDCAData (bare or not)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "--git-dir", str(args.git_dir), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"commit {commit}")
    source, target = SUBSAMPLE
    outputs = {target: subsample(git_show(args.git_dir, source), SUBSAMPLE_SIZE, SUBSAMPLE_SEED)}
    outputs[GZIPPED[1]] = gzip_bytes(git_show(args.git_dir, GZIPPED[0]))
    outputs.update({target: git_show(args.git_dir, source) for source, target in COPIES})
    for target, data in outputs.items():
        path = args.out / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{hashlib.sha256(data).hexdigest()}  {target}  ({len(data)} bytes)")


if __name__ == "__main__":
    main()
