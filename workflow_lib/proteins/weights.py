"""Sequence weights of an alignment (plmDCA reweighting) and the effective number of sequences.

Sequence ``m`` of ``seqs: (M, L)`` has weight ``1 / #{n : identity(m, n) >= identity}``, itself
included, where ``identity(m, n)`` is the fraction of the ``L`` columns where the two sequences
hold the same code (gaps included, as plmDCA). The neighbour counts are computed in JAX by a
``jax.lax.map`` over blocks of rows, each block compared with all ``M`` sequences one column at a
time, so that memory grows as ``block * M`` and alignments of ``M = 1e5`` sequences fit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def _neighbour_counts(blocks_t: jax.Array, seqs_t: jax.Array, min_matches: jax.Array) -> jax.Array:
    """``(B, block)`` int32: for each row of the blocks, the number of sequences equal to it in at
    least ``min_matches`` columns.

    ``blocks_t: (B, L, block)`` holds the rows block by block, transposed; ``seqs_t: (L, M)`` all
    the sequences, transposed. The ``(block, M)`` match counts are summed over the columns by a
    ``jax.lax.scan`` (int16 while ``L`` allows it), never forming a ``(block, M, L)`` array.
    """
    L, M = seqs_t.shape
    dtype = jnp.int16 if L <= jnp.iinfo(jnp.int16).max else jnp.int32

    def count(block_t: jax.Array) -> jax.Array:
        def add_column(matches: jax.Array, column: tuple[jax.Array, jax.Array]) -> tuple:
            rows, others = column
            return matches + (rows[:, None] == others[None, :]).astype(dtype), None

        start = jnp.zeros((block_t.shape[1], M), dtype)
        matches, _ = jax.lax.scan(add_column, start, (block_t, seqs_t))
        return (matches >= min_matches).sum(axis=-1, dtype=jnp.int32)

    return jax.lax.map(count, blocks_t)


def neighbour_counts(queries: np.ndarray, references: np.ndarray, identity: float = 0.8,
                     block: int = 512) -> np.ndarray:  # fmt: skip
    """``(M_q,)`` int: for each row of ``queries: (M_q, L)``, the number of rows of
    ``references: (M_r, L)`` at fractional identity ``identity`` or above.

    A pair counts when it matches in ``k`` columns with ``k / L >= identity`` in float64 (so
    ``identity=0.8`` with ``L = 5`` counts 4 matches). Queries are padded to a multiple of
    ``block`` and compared ``block`` at a time with all references (a ``(block, M_r)`` count
    array in memory); the computation is compiled once per shape. Raises ``ValueError`` for an
    empty or non-2-D input, unequal lengths, ``identity`` outside [0, 1] or ``block < 1``.
    """
    queries, references = np.asarray(queries), np.asarray(references)
    for name, seqs in (("queries", queries), ("references", references)):
        if seqs.ndim != 2 or seqs.shape[0] == 0 or seqs.shape[1] == 0:
            raise ValueError(f"neighbour_counts: {name} has shape {seqs.shape}, expected (M, L)")
    if queries.shape[1] != references.shape[1]:
        raise ValueError(f"neighbour_counts: lengths {queries.shape[1]} and "
                         f"{references.shape[1]} differ")
    if not 0.0 <= identity <= 1.0:
        raise ValueError(f"neighbour_counts: identity = {identity} is outside [0, 1]")
    if block < 1:
        raise ValueError(f"neighbour_counts: block = {block}, expected at least 1")
    M, L = queries.shape
    min_matches = int(np.count_nonzero(np.arange(L + 1) / L < identity))
    n_blocks = -(-M // block)
    padded = np.full((n_blocks * block, L), -1, np.int8)
    padded[:M] = queries
    counts = _neighbour_counts(
        jnp.asarray(padded.reshape(n_blocks, block, L).transpose(0, 2, 1)),
        jnp.asarray(references.T, jnp.int8),
        jnp.int32(min_matches),
    )
    return np.asarray(counts).reshape(-1)[:M]


def sequence_weights(seqs: np.ndarray, identity: float = 0.8, block: int = 512) -> np.ndarray:
    """``(M,)`` float64 weights ``1 / #{n : identity(m, n) >= identity}`` of ``seqs: (M, L)``,
    itself included (``neighbour_counts`` of the alignment with itself)."""
    return 1.0 / neighbour_counts(seqs, seqs, identity, block).astype(np.float64)
