"""Contact prediction from couplings and attention maps, and its precision against structures.

Couplings ``J`` have shape ``(L, L, Q, Q)``, ``J[i, j, a, b]`` the coupling of state ``a`` at
position ``i`` with state ``b`` at position ``j``, over the alphabet ``ACDEFGHIKLMNPQRSTVWY-``
(the 20 amino acids, then the gap at index 20; Q = 21).

The score of a pair is the plmDCA score of Ekeberg et al. (2013), Phys. Rev. E 87, 012707: the
Frobenius norm of the coupling block in the zero-sum (Ising) gauge, the gauge taken over all Q
states and the norm over the 20 amino acids, followed by the average-product correction (APC) of
Dunn, Wahl & Gloor (2008), Bioinformatics 24, 333. Precision is the fraction of true contacts
(the distance file's residue distance below a threshold, residues at least ``min_separation``
alignment columns apart) among the top-k ranked pairs; pairs whose distance is unknown (NaN)
are left out of the ranking.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

N_AMINO_ACIDS = 20  # the alphabet's amino acids come first; the gap is index 20
JACOBIAN_SUFFIX = "-jacobian"  # a transformer's Jacobian contact scores: rows of their own


def _check_couplings(J: np.ndarray) -> np.ndarray:
    J = np.asarray(J, dtype=float)
    if J.ndim != 4 or J.shape[0] != J.shape[1] or J.shape[2] != J.shape[3]:
        raise ValueError(f"couplings must have shape (L, L, Q, Q), got {J.shape}")
    return J


def _check_square(m: np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(m, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must have shape (L, L), got {m.shape}")
    return m


def symmetrise_couplings(J: np.ndarray) -> np.ndarray:
    """``(J_ij + J_ji^T) / 2`` for every pair, shape ``(L, L, Q, Q)``: the symmetric couplings
    ``J[i, j, a, b] = J[j, i, b, a]`` of an asymmetric (per-position) pseudo-likelihood fit, as
    in the symmetric plmDCA of Ekeberg et al. (2013)."""
    J = _check_couplings(J)
    return 0.5 * (J + J.transpose(1, 0, 3, 2))


def zero_sum_gauge(J: np.ndarray) -> np.ndarray:
    """The couplings in the zero-sum (Ising) gauge, shape ``(L, L, Q, Q)``:
    ``J'_ij(a, b) = J_ij(a, b) - mean_a' J_ij(a', b) - mean_b' J_ij(a, b')
    + mean_a'b' J_ij(a', b')``, the means over all Q states (Ekeberg et al. 2013). Every row and
    column of each ``(Q, Q)`` block of the result sums to zero, and the transform is idempotent;
    it removes any ``u_ij(a) + v_ij(b)`` added to a block."""
    J = _check_couplings(J)
    return (J - J.mean(axis=2, keepdims=True) - J.mean(axis=3, keepdims=True)
            + J.mean(axis=(2, 3), keepdims=True))


def frobenius_scores(J: np.ndarray, exclude_gap: bool = True) -> np.ndarray:
    """The plmDCA Frobenius-norm scores, shape ``(L, L)``, symmetric, zero diagonal.

    The couplings ``(L, L, Q, Q)`` are symmetrised (``symmetrise_couplings``) and put in the
    zero-sum gauge over all Q states (``zero_sum_gauge``); the score of ``(i, j)`` is the Frobenius
    norm of the block over the 20 amino acids when ``exclude_gap`` (the gap's row and column,
    index 20, left out, Ekeberg et al. 2013), over all Q states otherwise.
    """
    Jg = zero_sum_gauge(symmetrise_couplings(J))
    if exclude_gap:
        if Jg.shape[2] <= N_AMINO_ACIDS:
            raise ValueError(f"exclude_gap needs Q > {N_AMINO_ACIDS} states, got {Jg.shape[2]}")
        Jg = Jg[:, :, :N_AMINO_ACIDS, :N_AMINO_ACIDS]
    F = np.sqrt(np.sum(Jg**2, axis=(2, 3)))
    np.fill_diagonal(F, 0.0)
    return F


def apc(F: np.ndarray) -> np.ndarray:
    """The average-product correction of Dunn et al. (2008), shape ``(L, L)``:
    ``F_ij - F_i. F_.j / F_..`` with ``F_i.`` the mean of row i, ``F_.j`` the mean of column j and
    ``F_..`` the mean of the matrix, all over the off-diagonal entries; zero diagonal. A matrix
    whose off-diagonal mean is zero is returned uncorrected (diagonal zeroed)."""
    F = _check_square(F, "scores")
    L = F.shape[0]
    if L < 2:
        return np.zeros_like(F)
    off = ~np.eye(L, dtype=bool)
    Fo = np.where(off, F, 0.0)
    row = Fo.sum(axis=1) / (L - 1)
    col = Fo.sum(axis=0) / (L - 1)
    total = Fo.sum() / (L * (L - 1))
    out = Fo - np.outer(row, col) / total if total != 0 else Fo.copy()
    np.fill_diagonal(out, 0.0)
    return out


def contact_scores(J: np.ndarray) -> np.ndarray:
    """The plmDCA contact scores of couplings ``(L, L, Q, Q)``: ``apc(frobenius_scores(J))``,
    shape ``(L, L)``, gap excluded (Ekeberg et al. 2013; Dunn et al. 2008)."""
    return apc(frobenius_scores(J))


def attention_scores(att: np.ndarray) -> np.ndarray:
    """Contact scores from an attention map ``(L, L)`` (a transformer's attention, or the
    position-position matrix of multi-head attention without values): the symmetrised absolute
    values ``(|A| + |A|^T) / 2``, then the APC (Dunn et al. 2008); shape ``(L, L)``, zero
    diagonal."""
    a = np.abs(_check_square(att, "attention map"))
    return apc(0.5 * (a + a.T))


def ranked_pairs(scores: np.ndarray, min_separation: int,
                 positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs ``i < j`` with ``positions[j] - positions[i] >= min_separation``, by decreasing
    score.

    ``positions: (L,)`` increasing residue numbers of the rows of ``scores`` (default
    ``0..L-1``; the alignment columns kept by a gap filter, so that separation counts columns of
    the alignment). Scores are read from the upper triangle of ``scores`` ``(L, L)``. Returns
    ``(i, j, score)``, indices into ``scores``, three arrays of length P (the number of such
    pairs); ties keep the order of ``(i, j)`` (lexicographic), and NaN scores come last.
    """
    scores = _check_square(scores, "scores")
    L = scores.shape[0]
    positions = np.arange(L) if positions is None else np.asarray(positions)
    i, j = np.triu_indices(L, k=1)
    far = positions[j] - positions[i] >= max(1, int(min_separation))
    i, j = i[far], j[far]
    s = scores[i, j]
    order = np.argsort(-s, kind="stable")  # NaN sorts last
    return i[order], j[order], s[order]


def _ranked_contacts(scores: np.ndarray, distances: np.ndarray, min_separation: int,
                     threshold: float, positions: np.ndarray | None) -> np.ndarray:
    """Whether each ranked pair with a known distance is a contact, best-scored first."""
    distances = _check_square(distances, "distances")
    if distances.shape != np.shape(scores):
        raise ValueError(f"distances {distances.shape} and scores {np.shape(scores)} differ")
    i, j, _ = ranked_pairs(scores, min_separation, positions)
    d = distances[i, j]
    d = d[~np.isnan(d)]
    return d < threshold


def precision_curve(scores: np.ndarray, distances: np.ndarray, min_separation: int,
                    threshold: float, max_rank: int,
                    positions: np.ndarray | None = None) -> np.ndarray:
    """Precision of the top-r pairs for r = 1..max_rank, shape ``(max_rank,)``.

    Pairs at ``min_separation`` or more (``positions``: as ``ranked_pairs``) are ranked by
    ``scores`` (``ranked_pairs``);
    those whose distance (``distances``, ``(L, L)``, Å) is NaN are skipped, and entry r - 1 is the
    fraction of the r best remaining pairs with distance below ``threshold``. Ranks beyond the
    number of pairs with a known distance are NaN.
    """
    contact = _ranked_contacts(scores, distances, min_separation, threshold, positions)
    out = np.full(int(max_rank), np.nan)
    n = min(len(contact), int(max_rank))
    out[:n] = np.cumsum(contact[:n]) / np.arange(1, n + 1)
    return out


def precision_at(scores: np.ndarray, distances: np.ndarray, min_separation: int,
                 threshold: float, ks: Sequence[int],
                 positions: np.ndarray | None = None) -> dict[int, float]:
    """Precision of the top-k pairs for each k in ``ks``: ``{k: precision}``, as
    ``precision_curve(...)[k - 1]`` (NaN when fewer than k pairs have a known distance)."""
    ks = [int(k) for k in ks]
    if any(k < 1 for k in ks):
        raise ValueError(f"ks must be positive, got {ks}")
    if not ks:
        return {}
    curve = precision_curve(scores, distances, min_separation, threshold, max(ks), positions)
    return {k: float(curve[k - 1]) for k in ks}


def contact_map(distances: np.ndarray, threshold: float, min_separation: int,
                positions: np.ndarray | None = None) -> np.ndarray:
    """The true contacts, a symmetric boolean ``(L, L)``: distance below ``threshold`` and
    separation ``|positions[i] - positions[j]| >= min_separation`` (``positions`` as
    ``ranked_pairs``); unknown (NaN) distances are not contacts."""
    d = _check_square(distances, "distances")
    idx = np.arange(d.shape[0]) if positions is None else np.asarray(positions)
    sep = np.abs(idx[:, None] - idx[None, :]) >= max(1, int(min_separation))
    with np.errstate(invalid="ignore"):
        return sep & ~np.isnan(d) & (d < threshold)


def precision_ks(L: int) -> dict[str, int]:
    """The usual numbers of top pairs for a protein of length L:
    ``{"L/5": max(1, L // 5), "L/2": max(1, L // 2), "L": L}``."""
    return {"L/5": max(1, L // 5), "L/2": max(1, L // 2), "L": int(L)}
