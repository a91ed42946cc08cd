"""The full-coupling pseudo-likelihood fit (``plm/full``) against an established plmDCA, pydca's
C++ backend, on the same data set.

    .venv/bin/pip install --no-deps pydca      # for this benchmark only; never a dependency
    .venv/bin/python benchmarks/compare_plmdca.py results/potts/r0/samples.h5 --l2 1e-3

pydca fits the symmetric plmDCA model (fields ``h_i(a)``, couplings ``J_ij(a, b)`` for i < j,
q = 21 states, the 21st a gap that never occurs here) on the *distinct* sequences of an
alignment (it drops repeats; at ``seqid`` above (L - 1) / L every weight is one) by L-BFGS on

    sum_n sum_i -log P(s_i^n | rest) + lambda_h ||h||^2 + lambda_J sum_{i<j} ||J_ij||^2.

The project's ``full`` fit (asymmetric couplings, no fields) minimises
``(1 / L) mean_n sum_i -log P + (l2 / L) sum_{i != j} ||J_ij||^2``; on the same distinct
sequences, ``lambda_J = 2 l2 M_distinct`` is the same penalty on symmetric couplings
(``lambda_h`` likewise). Both are compared in the zero-sum gauge over the C colours (gap
dropped), the asymmetric fit symmetrised, ``(J_ij(a, b) + J_ji(b, a)) / 2``; each is also
compared with the truth ``beta J_ij (U_ab)`` in the same gauge. Prints, per fit, the test loss per
site on the data set's test sequences (all of them, and those absent from the training set),
iterations and wall time; then the Pearson r and relative Frobenius distance of the two fits'
couplings, and of their Frobenius-norm maps ``F_ij = ||J_ij||``.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.core.config import schema_defaults
from workflow_lib.mlm.plm import coupling_logits, fit_plm
from workflow_lib.potts.artefact import load_samples
from workflow_lib.potts.sequences import in_training_set
from workflow_lib.studies.potts_paper.stages_fits import plm_options

# pydca's residue letters for the states 0..20 of its protein alphabet (the gap last, as in
# ``workflow_lib.proteins.alignment.ALPHABET``).
LETTERS = "ACDEFGHIKLMNPQRSTVWY-"
Q = 21


def pydca_backend() -> ctypes.CDLL:
    """pydca's compiled plmDCA library, loaded without importing pydca's Python (which pins
    numpy <= 1.15)."""
    spec = importlib.util.find_spec("pydca")
    if spec is None or spec.origin is None:
        raise SystemExit("pydca is not installed: .venv/bin/pip install --no-deps pydca")
    found = sorted((Path(spec.origin).parent / "plmdca").glob("_plmdcaBackend*.so"))
    if not found:
        raise SystemExit(f"pydca's plmDCA library is missing under {Path(spec.origin).parent}")
    return ctypes.CDLL(str(found[0]))


def fit_pydca(seqs: np.ndarray, lambda_h: float, lambda_j: float, max_iter: int,
              seqid: float | None = None, threads: int = 1, verbose: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """pydca's plmDCA on ``seqs: (M, L)`` (codes < 21, the gap 20): ``(h (L, Q), J (L, L, Q,
    Q))``, J symmetric (``J[j, i] = J[i, j].T``) with a zero diagonal.

    pydca keeps the distinct sequences only and weighs each by ``1 / #{distinct n : identity >
    seqid}`` (strictly above, itself included); ``seqid=None`` puts the threshold above every
    distinct pair's identity, so that every weight is one. ``threads``: its OpenMP threads;
    ``verbose``: its progress lines (one ``Iteration k:`` per L-BFGS iteration) on stderr."""
    L = seqs.shape[1]
    n_params = L * Q + L * (L - 1) // 2 * Q * Q
    fn = pydca_backend().plmdcaBackend
    # (biomolecule, q, fasta path, L, seqid, lambda_h, lambda_J, max_iter, threads, verbose)
    fn.argtypes = (ctypes.c_ushort, ctypes.c_ushort, ctypes.c_char_p, ctypes.c_uint,
                   *(ctypes.c_float,) * 3, ctypes.c_uint, ctypes.c_uint, ctypes.c_bool)
    fn.restype = ctypes.POINTER(ctypes.c_float * n_params)
    with tempfile.TemporaryDirectory() as tmp:
        fasta = Path(tmp) / "msa.fa"
        fasta.write_text(
            "".join(f">s{n}\n{''.join(LETTERS[c] for c in s)}\n" for n, s in enumerate(seqs))
        )
        if seqid is None:
            seqid = 1 - 0.5 / L  # above every distinct pair's identity: all weights one
        flat = np.array(
            fn(
                1, Q, str(fasta).encode(), L, seqid, lambda_h, lambda_j, max_iter, threads,
                verbose,
            ).contents,
            dtype=np.float64,
        )
    h = flat[: L * Q].reshape(L, Q)
    J = np.zeros((L, L, Q, Q))
    i, j = np.triu_indices(L, 1)  # pydca's order: (0, 1), (0, 2), ..., (L - 2, L - 1)
    blocks = flat[L * Q :].reshape(-1, Q, Q)
    J[i, j], J[j, i] = blocks, blocks.transpose(0, 2, 1)
    return h, J


def pl_loss(h: np.ndarray, J: np.ndarray, seqs: np.ndarray) -> float:
    """Negative pseudo-log-likelihood per site of ``seqs: (M, L)`` under fields ``h: (L, q)``
    and couplings ``J: (L, L, q, q)`` (zero diagonal blocks)."""
    seqs = jnp.asarray(seqs)
    logits = jnp.asarray(h)[None] + coupling_logits(jnp.asarray(J), seqs)
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), seqs[..., None], axis=-1)
    return float(-jnp.mean(logp))


def zero_sum_symmetric(J: np.ndarray, C: int) -> np.ndarray:
    """The colour block ``(L, L, C, C)`` of ``J: (L, L, q, q)`` symmetrised over (i, a) <-> (j, b)
    and put in the zero-sum gauge (every row and column of each ``J_ij`` sums to zero)."""
    J = J[:, :, :C, :C]
    J = 0.5 * (J + J.transpose(1, 0, 3, 2))
    return J - J.mean(2, keepdims=True) - J.mean(3, keepdims=True) + J.mean((2, 3), keepdims=True)


def compare(name: str, a: np.ndarray, b: np.ndarray) -> str:
    """A table row: Pearson r and relative distance (to ``b``) of the couplings ``(L, L, C, C)``
    over the pairs i < j, and the Pearson r of their Frobenius-norm maps."""
    i, j = np.triu_indices(a.shape[0], 1)
    pa, pb = a[i, j], b[i, j]  # (pairs, C, C)
    r = np.corrcoef(pa.ravel(), pb.ravel())[0, 1]
    dist = np.linalg.norm(pa - pb) / np.linalg.norm(pb)
    rf = np.corrcoef(np.linalg.norm(pa, axis=(1, 2)), np.linalg.norm(pb, axis=(1, 2)))[0, 1]
    return f"| {name} | {r:.4f} | {dist:.3f} | {rf:.4f} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("samples", help="a potts-samples/1 artefact")
    ap.add_argument("--l2", type=float, default=1e-3, help="the project's l2 (plm.l2_full)")
    ap.add_argument("--max-iter", type=int, default=2000)
    args = ap.parse_args()

    train, test, J0, U0, beta = load_samples(args.samples)
    L, C = J0.shape[0], U0.shape[0]
    if C > 20:
        raise SystemExit(f"pydca's protein alphabet holds 20 colours; this data set has C = {C}")
    distinct = np.unique(train, axis=0)
    m = len(distinct)
    lam = 2 * args.l2 * m
    heldout = test[~in_training_set(train, test)]
    print(
        f"{args.samples}: L = {L}, C = {C}, beta = {beta:.4f}, {len(train)} training sequences, "
        f"{m} distinct (both fits use these once each), {len(test)} test "
        f"({len(heldout)} absent from the training set); l2 = {args.l2:g} -> lambda_J = "
        f"lambda_h = {lam:.4g}"
    )

    t = time.perf_counter()
    options = replace(plm_options("full", schema_defaults("plm")), l2=args.l2,
                      max_iter=args.max_iter)
    ours = fit_plm("full", options, distinct, test, J0, U0, beta, jax.random.key(0))
    t_ours = time.perf_counter() - t
    J_ours = np.asarray(ours.params["J"])
    t = time.perf_counter()
    h_pd, J_pd = fit_pydca(distinct, lam, lam, args.max_iter)
    t_pd = time.perf_counter() - t

    zeros = np.zeros((L, C))
    truth = beta * J0[:, :, None, None] * U0[None, None]
    print("\n| fit | test loss | held-out test loss | iterations | wall s |")
    print("|---|---|---|---|---|")
    print(
        f"| project `full` (asymmetric, no fields) | {pl_loss(zeros, J_ours, test):.4f} | "
        f"{pl_loss(zeros, J_ours, heldout):.4f} | {ours.metrics['iterations']} "
        f"(max grad {ours.metrics['grad_norm']:.1e}) | {t_ours:.1f} |"
    )
    print(
        f"| pydca plmDCA (symmetric, fields, q = 21) | {pl_loss(h_pd, J_pd, test):.4f} | "
        f"{pl_loss(h_pd, J_pd, heldout):.4f} | ≤ {args.max_iter} | {t_pd:.1f} |"
    )
    print(
        f"| truth | {pl_loss(zeros, truth, test):.4f} | {pl_loss(zeros, truth, heldout):.4f} "
        "| – | – |"
    )
    a, b, c = (zero_sum_symmetric(x, C) for x in (J_ours, J_pd, truth))
    print(
        "\n| couplings, zero-sum gauge | Pearson r | relative distance (to 2nd) | r of F_ij maps |"
    )
    print("|---|---|---|---|")
    print(compare("project vs pydca", a, b))
    print(compare("project vs truth", a, c))
    print(compare("pydca vs truth", b, c))


if __name__ == "__main__":
    main()
