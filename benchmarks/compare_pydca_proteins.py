"""The protein study's plmDCA (``workflow_lib.proteins``, model ``plmdca``) against an established
plmDCA, pydca's C++ backend, on one shipped protein family: contact precision, agreement of the
two contact maps and wall time.

    .venv/bin/pip install --no-deps pydca      # for this benchmark only; never a dependency
    .venv/bin/python benchmarks/compare_pydca_proteins.py --family PF00014
    .venv/bin/python benchmarks/compare_pydca_proteins.py --family PF00014 PF13354 \
        --subsample PF13354=1000

Each family of ``--family`` is fitted in turn, one CSV row each. ``--subsample FAMILY=N`` keeps
``N`` rows of that family's gap-filtered alignment, drawn without replacement by
``numpy.random.default_rng(0)`` (in their alignment order), before the split (column
``subsample``; empty: every row).

Data as the workflow's ``protein_data`` stage makes it: the family's alignment gap-filtered with
the ``proteins`` schema defaults and held-out split ``--realisation`` drawn by
``splits.held_out_split`` with ``split_seed(seed, realisation)`` (its validation rows with
``validation_seed``), the training rows (the fitted ones) weighted among themselves at
``proteins.identity`` (0.8). The project's fit is
``fitting.fit_model("plmdca", ...)`` on the training rows with the schema defaults of
``proteins`` (``lambdas``, ``max_iter``, ``grad_tol``), keyed as the ``protein_fit`` stage keys
it; pydca fits the same training rows.

The two objectives. The project minimises (symmetric couplings, one ``J_ij = J_ji^T`` per pair
``i < j``, ``||J||^2`` over ``i != j``, training weights ``w_m`` with ``M_eff = sum_m w_m``)

    (1 / L) [ -(1 / M_eff) sum_m w_m sum_i log P(s_mi | s_m,-i)
              + lambda_h ||h||^2 + lambda_J sum_{i != j} ||J_ij||^2 ],

plmDCA's objective divided by ``L``. pydca minimises, on the *distinct* training sequences with
its own weights ``w'_n`` (``M'_eff = sum_n w'_n``) and symmetric couplings (one ``J_ij`` per pair
``i < j``, shared by the conditionals of ``i`` and ``j``),

    -sum_n w'_n sum_i log P(s_ni | s_n,-i) + lambda'_h ||h||^2 + lambda'_J sum_{i<j} ||J_ij||^2.

Multiplying the project's objective by ``L M'_eff`` (``sum_{i != j} = 2 sum_{i<j}``) gives
pydca's with ``lambda'_h = M'_eff lambda_h`` and
``lambda'_J = 2 M'_eff lambda_J``: the same penalty per unit of the weighted mean loss. pydca
counts a neighbour when its identity is strictly above ``seqid``, the project when it is at or
above ``identity``; ``seqid = (k - 0.5) / L``, with ``k`` the project's smallest number of
matching columns, is the same 0.8 threshold. ``M'_eff`` is computed here with the project's
``sequence_weights`` on the distinct training rows at that threshold (pydca's weights exactly).
The weights still differ in one way the script reports: the project's count neighbours among
all training rows (repeats included), pydca's among the distinct training rows.

Both coupling sets are scored by ``contacts.contact_scores`` (symmetrised, zero-sum gauge over the
21 states, Frobenius norm over the 20 amino acids, APC). Prints each fit's P@L/5, P@L/2 and P@L
(``|i - j| >= proteins.contacts.min_separation``, distance below ``proteins.contacts.threshold``,
``contacts.precision_at``), its weighted held-out loss (nats per site, as ``protein_fit``), the
project's objective on its training rows and weights at the fit's parameters (convex: a lower value
at pydca's parameters means that the project's fit stops short of its minimum; ``--grad-tol``
tightens its criterion), wall time and L-BFGS iterations (pydca's counted from its progress lines);
the project's objective at its fit again with the couplings' products in float64
(``plm.coupling_logits``: the fit's float32 products, ``models.coupling_product``, checked); the
Pearson and Spearman correlations of the two score maps over the pairs at that separation; and the
reference plmDCA P@L of ``claims.PLMDCA_REFERENCE`` as a sanity range (within
``claims.REFERENCE_TOLERANCE``) for an alignment file it knows by its sha256 (not for the shipped
subsamples). Appends one row per family to ``benchmarks/results/compare_pydca_proteins.csv``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import tempfile
import time
import zlib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats
from compare_plmdca import fit_pydca
from record import Recorder, default_csv

from workflow_lib.core.config import load_config
from workflow_lib.core.keys import stage_key
from workflow_lib.mlm.plm import coupling_logits
from workflow_lib.proteins import contacts, models
from workflow_lib.proteins.alignment import (
    filter_gaps,
    read_alignment,
    read_distances,
)
from workflow_lib.proteins.fitting import fit_model
from workflow_lib.proteins.splits import held_out_split
from workflow_lib.proteins.weights import sequence_weights
from workflow_lib.studies.proteins.claims import PLMDCA_REFERENCE, REFERENCE_TOLERANCE
from workflow_lib.studies.proteins.settings import fit_settings
from workflow_lib.studies.proteins.stages import split_seed, validation_seed

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "proteins"


def family_files(family: str) -> tuple[Path, Path]:
    """The shipped alignment and distance file of ``family`` under ``data/proteins``."""
    folder = DATA / family
    alignment = folder / f"{family}.fasta.gz"
    distances = sorted([*folder.glob(f"{family}_struct.dat*"),
                        *folder.glob(f"Atomic_distances_{family}.dat")])
    if not alignment.is_file() or not distances:
        shipped = sorted(p.name for p in DATA.iterdir() if p.is_dir())
        raise SystemExit(f"no shipped alignment with distances for {family}; shipped: {shipped}")
    return alignment, distances[0]


def weighted_loss(model: models.CouplingModel, params: dict, seqs: np.ndarray,
                  weights: np.ndarray) -> float:  # fmt: skip
    """The weighted mean over ``seqs: (M, L)`` of the per-sequence loss (nats per site)."""
    return float(models.weighted_loss(model, params, jnp.asarray(seqs, jnp.int32),
                                      jnp.asarray(weights)))


def objective(model: models.CouplingModel, params: dict, seqs: np.ndarray, weights: np.ndarray,
              lambdas: models.Lambdas) -> float:  # fmt: skip
    """The project's objective (module docstring) at ``params`` on ``seqs`` with ``weights``,
    the penalty strengths ``lambdas``."""
    return weighted_loss(model, params, seqs, weights) + float(
        models.penalty(model, params, lambdas, np.sum(weights)))


def objective_f64(params: dict, seqs: np.ndarray, weights: np.ndarray,
                  lambdas: models.Lambdas) -> float:  # fmt: skip
    """The project's plmDCA objective at ``params`` (the pairs' couplings ``J: (L (L - 1) / 2, Q,
    Q)``, ``h: (L, Q)``) on ``seqs: (M, L)`` with ``weights: (M,)`` and the penalty strengths
    ``lambdas``, the couplings' products in float64."""
    model = models.CouplingModel("plmdca", seqs.shape[1], fields=True)
    x = jnp.asarray(seqs, jnp.int32)
    logits = coupling_logits(models.couplings(model, params), x) + params["h"]
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), x[..., None], axis=-1)
    loss = models.weighted_mean(-jnp.mean(logp[..., 0], axis=-1), jnp.asarray(weights))
    return float(loss + models.penalty(model, params, lambdas, np.sum(weights)))


def fit_pydca_counted(*args, **kwargs) -> tuple[np.ndarray, np.ndarray, int]:
    """``compare_plmdca.fit_pydca`` with its L-BFGS iterations, counted from its progress lines
    (its C++ writes them to file descriptor 2, captured here): ``(h, J, iterations)``."""
    with tempfile.TemporaryFile("w+b") as log, contextlib.ExitStack() as stack:
        saved = os.dup(2)
        stack.callback(os.close, saved)
        os.dup2(log.fileno(), 2)
        try:
            h, J = fit_pydca(*args, **kwargs, verbose=True)
        finally:
            os.dup2(saved, 2)
        log.seek(0)
        iterations = len(re.findall(rb"Iteration \d+:", log.read()))
    return h, J, iterations


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", nargs="+", default=["PF00014"],
                    help="shipped families (data/proteins), fitted in turn")
    ap.add_argument("--subsample", action="append", default=[], metavar="FAMILY=N",
                    help="keep N rows of FAMILY's gap-filtered alignment (repeatable)")
    ap.add_argument("--seed", type=int, default=0, help="the config's seed")
    ap.add_argument("--realisation", type=int, default=0, help="the held-out split")
    ap.add_argument("--max-iter", type=int, default=None,
                    help="L-BFGS iterations at most, both fits (default: proteins.max_iter)")
    ap.add_argument("--grad-tol", type=float, default=None,
                    help="the project's gradient criterion (default: proteins.grad_tol)")
    ap.add_argument("--pydca-threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="pydca's OpenMP threads (default: the cores this process may use, "
                         "as JAX)")
    ap.add_argument("--csv", default=str(default_csv(__file__)))
    args = ap.parse_args()
    subsample = {}
    for item in args.subsample:
        family, _, n = item.partition("=")
        if not n.isdigit() or int(n) < 2:
            raise SystemExit(f"--subsample {item!r}: expected FAMILY=N, N >= 2")
        subsample[family] = int(n)
    for family in args.family:
        compare(family, subsample.get(family), args)


def compare(family: str, subsample: int | None, args: argparse.Namespace) -> None:
    """Fit ``family`` (``subsample`` rows of it, or all) both ways; print and record a row."""
    cfg = load_config({})["proteins"]
    if args.max_iter is not None:
        cfg["max_iter"] = args.max_iter
    if args.grad_tol is not None:
        cfg["grad_tol"] = args.grad_tol
    lam_h, lam_j = cfg["lambdas"]["fields"], cfg["lambdas"]["couplings"]
    sep, threshold = cfg["contacts"]["min_separation"], cfg["contacts"]["threshold"]

    path, dist_path = family_files(family)
    aln = read_alignment(path)
    seqs, _, columns = filter_gaps(aln.seqs, cfg["max_gap_sequence"], cfg["max_gap_column"])
    seqs = seqs.astype(np.int32)
    if subsample is not None and subsample < len(seqs):
        seqs = seqs[np.sort(np.random.default_rng(0).permutation(len(seqs))[:subsample])]
    else:
        subsample = None
    M, L = seqs.shape
    distances = read_distances(dist_path, aln.seqs.shape[1])[np.ix_(columns, columns)]
    split = held_out_split(seqs, cfg["held_out"], cfg["identity"],
                           split_seed(args.seed, args.realisation), cfg["validation"],
                           validation_seed(args.seed, args.realisation))
    weights, test, train = split.weights, split.test, seqs[split.train]

    distinct = np.unique(train, axis=0)
    min_matches = int(np.count_nonzero(np.arange(L + 1) / L < cfg["identity"]))
    seqid = (min_matches - 0.5) / L
    m_eff_pd = float(np.sum(sequence_weights(distinct, cfg["identity"])))
    pd_h, pd_j = m_eff_pd * lam_h, 2 * m_eff_pd * lam_j
    print(
        f"{family}: {M} x {L} after the gap filter ({aln.seqs.shape[0]} x "
        f"{aln.seqs.shape[1]} read{'' if subsample is None else ', rows subsampled'}); "
        f"split r{args.realisation} (seed {args.seed}): "
        f"{len(train)} training, {int(test.sum())} held out ({split.dropped} more dropped within "
        f"the identity of a training row)\n"
        f"project: M_eff {np.sum(weights[split.train]):.1f} over the training rows (weights "
        f"among them at identity >= {cfg['identity']}), lambda_h = {lam_h:g}, lambda_J = "
        f"{lam_j:g}, max_iter {cfg['max_iter']}, grad_tol {cfg['grad_tol']:g}\n"
        f"pydca: {len(distinct)} distinct training rows, M'_eff {m_eff_pd:.1f} at seqid "
        f"{seqid:.4f} (>= {min_matches} of {L} columns), lambda'_h = {pd_h:.4g}, lambda'_J = "
        f"{pd_j:.4g}, {args.pydca_threads} threads"
    )

    r = args.realisation
    key = jax.random.fold_in(stage_key(args.seed, "protein_fit", r), zlib.crc32(b"plmdca"))
    t = time.perf_counter()
    settings = fit_settings("plmdca", cfg)
    ours = fit_model("plmdca", settings, (train, weights[split.train]),
                     (seqs[split.validation], weights[split.validation]), seqs[test], key)
    t_ours = time.perf_counter() - t
    t = time.perf_counter()
    h_pd, J_pd, pd_iterations = fit_pydca_counted(train, pd_h, pd_j, cfg["max_iter"], seqid,
                                                  args.pydca_threads)  # fmt: skip
    t_pd = time.perf_counter() - t

    model = models.CouplingModel("plmdca", L, fields=True)
    pairs = np.triu_indices(L, 1)  # the fitted blocks of the couplings J: (L, L, Q, Q)
    params = {name: {"J": jnp.asarray(J[pairs]), "h": jnp.asarray(h)}
              for name, (J, h) in (("project", (ours.params["J"], ours.params["h"])),
                                   ("pydca", (J_pd, h_pd)))}  # fmt: skip
    loss = {name: weighted_loss(model, p, seqs[test], weights[test])
            for name, p in params.items()}  # fmt: skip
    obj = {name: objective(model, p, train, weights[split.train], settings.lambdas)
           for name, p in params.items()}  # fmt: skip
    obj64 = objective_f64(params["project"], train, weights[split.train], settings.lambdas)
    scores = {"project": ours.scores, "pydca": contacts.contact_scores(J_pd)}
    ks = contacts.precision_ks(L)
    precision = {name: contacts.precision_at(s, distances, sep, threshold, ks.values(),
                                             columns)
                 for name, s in scores.items()}  # fmt: skip
    sha256 = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    ref = PLMDCA_REFERENCE[sha256][1] if sha256 in PLMDCA_REFERENCE else None

    print("\n| fit | P@L/5 | P@L/2 | P@L | held-out loss | project objective | iterations | "
          "wall s |\n|---|---|---|---|---|---|---|---|")
    m = ours.metrics
    rows = {"project": f"{m['iterations']} ({'converged' if m['converged'] else 'NOT converged'}"
                       f", max grad {m['grad_norm']:.1e})",
            "pydca": f"{pd_iterations} (max_iter {cfg['max_iter']})"}  # fmt: skip
    for name, wall in (("project", t_ours), ("pydca", t_pd)):
        p = precision[name]
        print(f"| {name} plmDCA | {p[ks['L/5']]:.3f} | {p[ks['L/2']]:.3f} | {p[ks['L']]:.3f} | "
              f"{loss[name]:.4f} | {obj[name]:.6f} | {rows[name]} | {wall:.1f} |")
    print(f"project objective at its fit, couplings' products in float64: {obj64:.9f} "
          f"(float32 products: {obj['project']:.9f}, difference {obj['project'] - obj64:.1e})")
    i, j, _ = contacts.ranked_pairs(scores["project"], sep, columns)
    a, b = scores["project"][i, j], scores["pydca"][i, j]
    pearson = float(scipy.stats.pearsonr(a, b)[0])
    spearman = float(scipy.stats.spearmanr(a, b)[0])
    print(f"\nAPC Frobenius scores over the {len(i)} pairs with j - i >= {sep}: Pearson r "
          f"{pearson:.4f}, Spearman rho {spearman:.4f}")
    if ref is None:
        print(f"no reference plmDCA P@L for {family} (sha256 {sha256[:12]})")
    else:
        tolerance = REFERENCE_TOLERANCE.value
        for name in scores:
            value = precision[name][ks["L"]]
            inside = abs(value - ref) <= tolerance
            print(f"reference plmDCA P@L {ref:.2f} (AttentionDCA's result files), sanity range "
                  f"{ref - tolerance:.2f} to {min(ref + tolerance, 1):.2f}: "
                  f"{name} {value:.3f} {'inside' if inside else 'OUTSIDE'}")

    names = ("P_L5", "P_L2", "P_L")
    rec = Recorder(args.csv, (
        "family", "subsample", "L", "M_train", "M_test", "realisation", "M_eff", "M_distinct",
        "M_eff_pydca", "lambda_h", "lambda_J", "pydca_lambda_h", "pydca_lambda_J", "pydca_seqid",
        "max_iter", "project_iterations", "pydca_iterations", "project_converged",
        *(f"project_{n}" for n in names), *(f"pydca_{n}" for n in names),
        "project_heldout_loss", "pydca_heldout_loss", "project_objective", "project_objective_f64",
        "pydca_project_objective", "grad_tol", "scores_pearson", "scores_spearman",
        "project_wall_s", "pydca_wall_s", "pydca_threads", "reference_P_L"))  # fmt: skip
    rec.add(family=family, subsample=subsample, L=L, M_train=len(train), M_test=int(test.sum()),
            realisation=r, M_eff=float(np.sum(weights[split.train])), M_distinct=len(distinct),
            M_eff_pydca=m_eff_pd,
            lambda_h=lam_h, lambda_J=lam_j, pydca_lambda_h=pd_h, pydca_lambda_J=pd_j,
            pydca_seqid=seqid, max_iter=cfg["max_iter"], project_iterations=m["iterations"],
            pydca_iterations=pd_iterations,            project_converged=m["converged"],
            **{f"{name}_{n}": precision[name][ks[k]]
               for name in scores for n, k in zip(names, ("L/5", "L/2", "L"), strict=True)},
            project_heldout_loss=loss["project"], pydca_heldout_loss=loss["pydca"],
            project_objective=obj["project"], project_objective_f64=obj64,
            pydca_project_objective=obj["pydca"],
            grad_tol=cfg["grad_tol"], scores_pearson=pearson,
            scores_spearman=spearman, project_wall_s=t_ours, pydca_wall_s=t_pd,
            pydca_threads=args.pydca_threads, reference_P_L=ref)  # fmt: skip
    print(f"\nappended a row to {rec.path}")


if __name__ == "__main__":
    main()
