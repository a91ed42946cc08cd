"""The protein study's plmDCA (``workflow_lib.proteins``, model ``plmdca``) against established
plmDCAs, pydca's C++ backend and, where a ``plmc`` binary is found, plmc (C, OpenMP), on one shipped
protein family: contact precision, agreement of the contact maps and wall time (plmc's and the
project's per L-BFGS iteration, at one thread count).

    .venv/bin/pip install --no-deps pydca      # for this benchmark only; never a dependency
    .venv/bin/python benchmarks/compare_pydca_proteins.py --family PF00014
    .venv/bin/python benchmarks/compare_pydca_proteins.py --family PF00014 PF13354 \
        --subsample PF13354=1000
    .venv/bin/python benchmarks/compare_pydca_proteins.py --family PF13354 \
        --subsample PF13354=6000 --max-iter 20 --grad-tol 0 \
        --plmc PLMC/double/bin/plmc --plmc PLMC/single/bin/plmc

Each family of ``--family`` is fitted in turn, one CSV row each (one per plmc binary when plmc
runs). ``--subsample FAMILY=N`` keeps
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
it; pydca and plmc fit the same training rows.

The objectives. The project minimises (symmetric couplings, one ``J_ij = J_ji^T`` per pair
``i < j``, ``||J||^2`` over ``i != j``, training weights ``w_m`` with ``M_eff = sum_m w_m``)

    (1 / L) [ -(1 / M_eff) sum_m w_m sum_i log P(s_mi | s_m,-i)
              + lambda_h ||h||^2 + lambda_J sum_{i != j} ||J_ij||^2 ],

plmDCA's objective divided by ``L``. pydca minimises, on the *distinct* training sequences with
its own weights ``w'_n`` (``M'_eff = sum_n w'_n``) and symmetric couplings (one ``J_ij`` per pair
``i < j``, shared by the conditionals of ``i`` and ``j``),

    -sum_n w'_n sum_i log P(s_ni | s_n,-i) + lambda'_h ||h||^2 + lambda'_J sum_{i<j} ||J_ij||^2.

Multiplying the project's objective by ``L M'_eff`` (``sum_{i != j} = 2 sum_{i<j}``) gives
pydca's with ``lambda'_h = M'_eff lambda_h`` and
``lambda'_J = 2 M'_eff lambda_J``: the same penalty per unit of the weighted mean loss
(``matched_lambdas``). pydca
counts a neighbour when its identity is strictly above ``seqid``, the project when it is at or
above ``identity``; ``seqid = (k - 0.5) / L``, with ``k`` the project's smallest number of
matching columns, is the same 0.8 threshold. ``M'_eff`` is computed here with the project's
``sequence_weights`` on the distinct training rows at that threshold (pydca's weights exactly).
The weights still differ in one way the script reports: the project's count neighbours among
all training rows (repeats included), pydca's among the distinct training rows.

plmc (github.com/debbiemarkslab/plmc; never a dependency: clone it, ``make all-openmp`` builds
``bin/plmc`` in double precision, ``make all-openmp32`` in single) runs when ``--plmc PATH``
names it (repeatable: one row per binary) or, without ``--plmc``, when a ``plmc`` is on
``PATH``; otherwise one line says that it was skipped and why. It reads the training rows as
FASTA (repeats included) and minimises (``src/inference.c``, ``PLMNegLogPosterior``; no rescaling
of its lambdas by ``L`` or ``q``), with its weights ``w''_m = 1 / #{n : matches(m, n) >= (1 -
theta) L}`` (itself included, gaps matching gaps) and ``N_eff = sum_m w''_m``,

    -sum_m w''_m sum_i log P(s_mi | s_m,-i) + lambda''_h ||h||^2 + lambda''_e sum_{i<j} ||e_ij||^2.

``-t theta`` with ``theta = 1 - seqid`` puts its threshold at ``k - 0.5`` matches, between two
counts, so that its weights are the project's training weights exactly (both count among all
the training rows; ``plmc_M_eff``, from its ``--save-weights``, checks it) and ``N_eff =
M_eff``; the project's objective times ``L M_eff`` is then plmc's with ``-lh`` ``lambda''_h =
M_eff lambda_h`` and ``-le`` ``lambda''_e = 2 M_eff lambda_J`` (``matched_lambdas``). The gap is a
state (no ``-g``); its L-BFGS (liblbfgs) stops after ``-m max_iter`` iterations or at its own
criterion (``||g|| < 1e-3 max(1, ||x||)``, ``plmc_stop``). It runs at the project's thread count
(``-n`` and ``OMP_NUM_THREADS``; ``plmc_threads`` is the count plmc reports using): XLA:CPU's,
one with ``--xla_cpu_multi_thread_eigen=false`` in ``XLA_FLAGS``, else the cores this process
may use (``taskset`` narrows them), also pydca's default. Its parameters (``-o``, float32) are
read in the project's state order and scored as the other fits; ``plmc_objective`` is its own
last objective over ``L M_eff`` (equal to ``plmc_project_objective``, the project's objective at
its parameters, when the two objectives are matched; low in single precision, where plmc adds the
penalty's terms one at a time to a float32 sum), ``plmc_own_P_L`` the P@L of its own scores (its
``-c`` file: APC Frobenius norms over all 21 states, no gauge change). Per iteration: plmc's from
its progress lines (elapsed time at 0.1 s resolution, iterations 2 to K: ``(t_K - t_1) / (K -
1)``), the project's as ``bench_proteins.timed_minimize`` times it (the L-BFGS call less the same
call stopped at zero iterations, over its iterations; ``--grad-tol 0`` runs all ``--max-iter``;
``project_wall_s`` includes that call's one more evaluation). ``plmc_version`` is ``git describe``
of the plmc checkout the binary lies in (``unknown`` elsewhere), ``plmc_sha256`` the binary's,
``plmc_precision`` read from the digits of its saved weights (16: double, 8: single).

Every coupling set is scored by ``contacts.contact_scores`` (symmetrised, zero-sum gauge over the
21 states, Frobenius norm over the 20 amino acids, APC). Prints each fit's P@L/5, P@L/2 and P@L
(``|i - j| >= proteins.contacts.min_separation``, distance below ``proteins.contacts.threshold``,
``contacts.precision_at``), its weighted held-out loss (nats per site, as ``protein_fit``), the
project's objective on its training rows and weights at the fit's parameters (convex: a lower value
at another fit's parameters means that the project's fit stops short of its minimum;
``--grad-tol`` tightens its criterion), wall time and L-BFGS iterations (pydca's counted from its
progress lines);
the project's objective at its fit again with the couplings' products in float64
(``plm.coupling_logits``: the fit's float32 products, ``models.coupling_product``, checked); the
Pearson and Spearman correlations of the project's score map with each other's over the pairs at
that separation; and the
reference plmDCA P@L of ``claims.PLMDCA_REFERENCE`` as a sanity range (within
``claims.REFERENCE_TOLERANCE``) for an alignment file it knows by its sha256 (not for the shipped
subsamples). Appends the rows to ``benchmarks/results/compare_pydca_proteins.csv``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats
from bench_proteins import timed_minimize
from compare_plmdca import LETTERS, fit_pydca
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
PLMC_SKIPPED = ("skipped plmc: no plmc on PATH and no --plmc PATH (build "
                "github.com/debbiemarkslab/plmc with make all-openmp)")


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


def matched_lambdas(m_eff: float, lambda_h: float, lambda_j: float) -> tuple[float, float]:
    """The penalty strengths ``(fields, pairs i < j)`` of an unnormalised plmDCA objective (a
    weighted sum over sequences with summed weight ``m_eff``, one penalty per pair ``i < j``:
    pydca's, plmc's) that make it ``L m_eff`` times the project's with ``lambda_h``,
    ``lambda_j`` (module docstring)."""
    return m_eff * lambda_h, 2 * m_eff * lambda_j


def project_threads() -> int:
    """The threads of the project's fit: XLA:CPU's, one with ``--xla_cpu_multi_thread_eigen=false``
    in ``XLA_FLAGS``, else the cores this process may use."""
    if "--xla_cpu_multi_thread_eigen=false" in os.environ.get("XLA_FLAGS", ""):
        return 1
    return len(os.sched_getaffinity(0))


def write_fasta(seqs: np.ndarray, path: Path) -> None:
    """``seqs: (M, L)`` (codes < 21, the gap 20) as an aligned FASTA file, one line a sequence."""
    letters = np.array(list(LETTERS))
    path.write_text("".join(f">s{n}\n{''.join(letters[s])}\n" for n, s in enumerate(seqs)))


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


def plmc_binaries(given: list[str]) -> list[Path]:
    """The plmc executables to run: those of ``--plmc`` (each must be one), else the ``plmc`` on
    ``PATH``, else none."""
    if not given:
        found = shutil.which("plmc")
        return [] if found is None else [Path(found)]
    found = {name: shutil.which(name) for name in given}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise SystemExit(f"--plmc: not an executable file: {', '.join(missing)}")
    return [Path(path) for path in found.values()]


def plmc_version(binary: Path) -> str:
    """``git describe --always --dirty`` of the plmc checkout that holds ``binary`` (its
    ``bin/plmc``), ``unknown`` outside one (or inside this repository)."""
    folder = str(binary.resolve().parent)
    git = ("rev-parse", "--show-toplevel"), ("describe", "--always", "--dirty", "--abbrev=12")
    try:
        top, described = (subprocess.run(["git", "-C", folder, *cmd], capture_output=True,
                                         text=True, check=True).stdout.strip()
                          for cmd in git)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return "unknown" if Path(top).resolve() == ROOT else described or "unknown"


@dataclass
class PlmcFit:
    """One plmc fit: ``h: (L, Q)`` and ``J: (L, L, Q, Q)`` in the project's state order,
    ``own_scores: (L, L)`` (its couplings file), ``weights: (M,)`` (its saved weights), its
    L-BFGS ``iterations``, ``s_per_iteration`` (``(t_K - t_1) / (K - 1)`` of its progress lines;
    None below two iterations), ``objective`` (its last), ``threads`` (as it reports them),
    ``precision`` (``double``, ``single``), ``stop`` (liblbfgs's status), ``wall_s`` (the whole
    process) and ``options`` (its command line's options)."""

    h: np.ndarray
    J: np.ndarray
    own_scores: np.ndarray
    weights: np.ndarray
    iterations: int
    s_per_iteration: float | None
    objective: float | None
    threads: int
    precision: str
    stop: str
    wall_s: float
    options: str


def read_plmc_params(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(h (L, Q), blocks (L (L - 1) / 2, Q, Q))`` of plmc's binary parameter file (``-o``,
    ``OutputParametersFull`` in its ``src/plm.c``: int32 counts, float32 figures), the states
    reordered from plmc's alphabet (stored in the file) to the project's (``LETTERS``)."""
    raw = path.read_bytes()
    L, q, n_seqs, n_skipped, _ = (int(v) for v in np.frombuffer(raw, "<i4", 5))
    at = 5 * 4 + 5 * 4  # the counts; theta, lambda_h, lambda_e, lambda_g, N_eff
    alphabet = raw[at : at + q].decode()
    if sorted(alphabet) != sorted(LETTERS):
        raise SystemExit(f"plmc's alphabet {alphabet!r} is not the project's {LETTERS!r}")
    at += q + 4 * (n_seqs + n_skipped) + L + 4 * L + 4 * L * q  # neighbours, focus, offsets, f_i
    h = np.frombuffer(raw, "<f4", L * q, at).reshape(L, q)
    P = L * (L - 1) // 2
    at += 4 * L * q + 4 * P * q * q  # h, f_ij
    e = np.frombuffer(raw, "<f4", P * q * q, at).reshape(P, q, q)
    if at + 4 * P * q * q != len(raw):
        raise SystemExit(f"{path}: {len(raw)} bytes, not plmc's layout for L = {L}, q = {q}")
    order = np.array([alphabet.index(c) for c in LETTERS])  # plmc's state of each of ours
    return h[:, order].astype(np.float64), e[:, order][:, :, order].astype(np.float64)


def fit_plmc(binary: Path, seqs: np.ndarray, lambda_h: float, lambda_e: float, theta: float,
             max_iter: int, threads: int) -> PlmcFit:  # fmt: skip
    """plmc at ``binary`` on ``seqs: (M, L)`` (codes < 21, the gap 20) with ``-lh lambda_h -le
    lambda_e -t theta -m max_iter`` at ``threads`` threads (``-n`` when more than one, and
    ``OMP_NUM_THREADS``), its default alphabet, the gap a state."""
    L = seqs.shape[1]
    options = ["-lh", f"{lambda_h:.10g}", "-le", f"{lambda_e:.10g}", "-t", f"{theta:.10g}",
               "-m", str(max_iter), *(["-n", str(threads)] if threads > 1 else [])]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        fasta, params, scores, weights = (folder / name for name in
                                          ("train.fa", "params", "couplings", "weights"))
        write_fasta(seqs, fasta)
        cmd = [str(binary), "-o", str(params), "-c", str(scores), "--save-weights", str(weights),
               *options, str(fasta)]  # fmt: skip
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              env=os.environ | {"OMP_NUM_THREADS": str(threads)})
        wall = time.perf_counter() - t
        log = proc.stderr + proc.stdout
        if proc.returncode != 0 or not params.is_file():
            tail = "\n".join(log.strip().splitlines()[-10:])
            raise SystemExit(f"plmc failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
        h, blocks = read_plmc_params(params)
        i, j, s = np.loadtxt(scores, usecols=(0, 2, 5), unpack=True)
        own = np.zeros((L, L))
        own[i.astype(int) - 1, j.astype(int) - 1] = own[j.astype(int) - 1, i.astype(int) - 1] = s
        saved = weights.read_text().split()
        w = np.array(saved, np.float64)
    digits = re.match(r"-?\d\.(\d+)e", saved[0])
    precision = {16: "double", 8: "single"}.get(len(digits[1]) if digits else 0, "unknown")
    progress = [(int(k), float(t), float(fx)) for k, t, fx in
                re.findall(r"^(\d+)\t(\d+\.\d)\t\S+\t(\S+)\t", log, re.MULTILINE)]  # fmt: skip
    iterations = progress[-1][0] if progress else 0
    per = ((progress[-1][1] - progress[0][1]) / (progress[-1][0] - progress[0][0])
           if len(progress) > 1 else None)  # fmt: skip
    used = re.search(r"OpenMP: .*?Using (\d+) of \d+ threads", log)
    stop = re.search(r"Gradient optimization: (.+)", log)
    J = np.asarray(models.pair_couplings(jnp.asarray(blocks), L))
    return PlmcFit(h, J, own, w, iterations, per,
                   progress[-1][2] if progress else None, int(used[1]) if used else 1, precision,
                   stop[1] if stop else "unknown", wall, " ".join(options))


def agreement(a: np.ndarray, b: np.ndarray, sep: int, columns: np.ndarray) -> tuple[float, float]:
    """Pearson's r and Spearman's rho of the score maps ``a``, ``b: (L, L)`` over the pairs at
    separation ``sep`` or more (``contacts.ranked_pairs`` with ``columns``)."""
    i, j, _ = contacts.ranked_pairs(a, sep, columns)
    return (float(scipy.stats.pearsonr(a[i, j], b[i, j])[0]),
            float(scipy.stats.spearmanr(a[i, j], b[i, j])[0]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", nargs="+", default=["PF00014"],
                    help="shipped families (data/proteins), fitted in turn")
    ap.add_argument("--subsample", action="append", default=[], metavar="FAMILY=N",
                    help="keep N rows of FAMILY's gap-filtered alignment (repeatable)")
    ap.add_argument("--seed", type=int, default=0, help="the config's seed")
    ap.add_argument("--realisation", type=int, default=0, help="the held-out split")
    ap.add_argument("--max-iter", type=int, default=None,
                    help="L-BFGS iterations at most, every fit (default: proteins.max_iter)")
    ap.add_argument("--grad-tol", type=float, default=None,
                    help="the project's gradient criterion (default: proteins.grad_tol)")
    ap.add_argument("--pydca-threads", type=int, default=project_threads(),
                    help="pydca's OpenMP threads (default: the project's, as plmc's: the cores "
                         "this process may use, one with XLA:CPU single-threaded)")
    ap.add_argument("--plmc", action="append", default=[], metavar="PATH",
                    help="a plmc binary to run beside the fits (repeatable, one row each; "
                         "default: plmc on PATH, if any)")
    ap.add_argument("--csv", default=str(default_csv(__file__)))
    args = ap.parse_args()
    subsample = {}
    for item in args.subsample:
        family, _, n = item.partition("=")
        if not n.isdigit() or int(n) < 2:
            raise SystemExit(f"--subsample {item!r}: expected FAMILY=N, N >= 2")
        subsample[family] = int(n)
    args.plmc = plmc_binaries(args.plmc)
    if not args.plmc:
        print(PLMC_SKIPPED)
    for family in args.family:
        compare(family, subsample.get(family), args)


def compare(family: str, subsample: int | None, args: argparse.Namespace) -> None:
    """Fit ``family`` (``subsample`` rows of it, or all) every way; print and record its rows."""
    cfg = load_config({})["proteins"]
    if args.max_iter is not None:
        cfg["max_iter"] = args.max_iter
    if args.grad_tol is not None:
        cfg["grad_tol"] = args.grad_tol
    lam_h, lam_j = cfg["lambdas"]["fields"], cfg["lambdas"]["couplings"]
    sep, threshold = cfg["contacts"]["min_separation"], cfg["contacts"]["threshold"]
    threads = project_threads()

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
    m_eff = float(np.sum(weights[split.train]))

    distinct = np.unique(train, axis=0)
    min_matches = int(np.count_nonzero(np.arange(L + 1) / L < cfg["identity"]))
    seqid = (min_matches - 0.5) / L
    m_eff_pd = float(np.sum(sequence_weights(distinct, cfg["identity"])))
    pd_h, pd_j = matched_lambdas(m_eff_pd, lam_h, lam_j)
    plmc_h, plmc_e = matched_lambdas(m_eff, lam_h, lam_j)
    print(
        f"{family}: {M} x {L} after the gap filter ({aln.seqs.shape[0]} x "
        f"{aln.seqs.shape[1]} read{'' if subsample is None else ', rows subsampled'}); "
        f"split r{args.realisation} (seed {args.seed}): "
        f"{len(train)} training, {int(test.sum())} held out ({split.dropped} more dropped within "
        f"the identity of a training row)\n"
        f"project: M_eff {m_eff:.1f} over the training rows (weights "
        f"among them at identity >= {cfg['identity']}), lambda_h = {lam_h:g}, lambda_J = "
        f"{lam_j:g}, max_iter {cfg['max_iter']}, grad_tol {cfg['grad_tol']:g}, {threads} "
        f"threads\n"
        f"pydca: {len(distinct)} distinct training rows, M'_eff {m_eff_pd:.1f} at seqid "
        f"{seqid:.4f} (>= {min_matches} of {L} columns), lambda'_h = {pd_h:.4g}, lambda'_J = "
        f"{pd_j:.4g}, {args.pydca_threads} threads"
    )
    if args.plmc:
        print(f"plmc: the {len(train)} training rows, theta {1 - seqid:.4f} (>= {min_matches} "
              f"of {L} columns), lambda''_h = {plmc_h:.4g}, lambda''_e = {plmc_e:.4g}, "
              f"{threads} threads: {', '.join(map(str, args.plmc))}")

    r = args.realisation
    key = jax.random.fold_in(stage_key(args.seed, "protein_fit", r), zlib.crc32(b"plmdca"))
    timing: dict = {}
    minimize, models.minimize = models.minimize, timed_minimize(timing)
    t = time.perf_counter()
    try:
        settings = fit_settings("plmdca", cfg)
        ours = fit_model("plmdca", settings, (train, weights[split.train]),
                         (seqs[split.validation], weights[split.validation]), seqs[test], key)
    finally:
        models.minimize = minimize
    t_ours = time.perf_counter() - t
    per_ours = timing["loop_s"] / timing["iterations"] if timing["iterations"] else None
    t = time.perf_counter()
    h_pd, J_pd, pd_iterations = fit_pydca_counted(train, pd_h, pd_j, cfg["max_iter"], seqid,
                                                  args.pydca_threads)  # fmt: skip
    t_pd = time.perf_counter() - t
    plmc = {}
    for binary in args.plmc:
        fit = fit_plmc(binary, train, plmc_h, plmc_e, 1 - seqid, cfg["max_iter"], threads)
        name = f"plmc {fit.precision}"
        plmc[name if name not in plmc else f"{name} ({len(plmc) + 1})"] = (binary, fit)

    model = models.CouplingModel("plmdca", L, fields=True)
    pairs = np.triu_indices(L, 1)  # the fitted blocks of the couplings J: (L, L, Q, Q)
    fitted = {"project": (ours.params["J"], ours.params["h"]), "pydca": (J_pd, h_pd),
              **{name: (fit.J, fit.h) for name, (_, fit) in plmc.items()}}  # fmt: skip
    params = {name: {"J": jnp.asarray(J[pairs]), "h": jnp.asarray(h)}
              for name, (J, h) in fitted.items()}  # fmt: skip
    loss = {name: weighted_loss(model, p, seqs[test], weights[test])
            for name, p in params.items()}  # fmt: skip
    obj = {name: objective(model, p, train, weights[split.train], settings.lambdas)
           for name, p in params.items()}  # fmt: skip
    obj64 = objective_f64(params["project"], train, weights[split.train], settings.lambdas)
    scores = {"project": ours.scores, "pydca": contacts.contact_scores(J_pd),
              **{name: contacts.contact_scores(fit.J) for name, (_, fit) in plmc.items()}}
    ks = contacts.precision_ks(L)
    precision = {name: contacts.precision_at(s, distances, sep, threshold, ks.values(),
                                             columns)
                 for name, s in scores.items()}  # fmt: skip
    sha256 = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    ref = PLMDCA_REFERENCE[sha256][1] if sha256 in PLMDCA_REFERENCE else None

    print("\n| fit | P@L/5 | P@L/2 | P@L | held-out loss | project objective | iterations | "
          "wall s | s per iteration | threads |\n|---|---|---|---|---|---|---|---|---|---|")
    m = ours.metrics
    rows = {"project": (f"{m['iterations']} ({'converged' if m['converged'] else 'NOT converged'}"
                        f", max grad {m['grad_norm']:.1e})", t_ours, per_ours, threads),
            "pydca": (f"{pd_iterations} (max_iter {cfg['max_iter']})", t_pd, None,
                      args.pydca_threads),
            **{name: (f"{fit.iterations} ({fit.stop})", fit.wall_s, fit.s_per_iteration,
                      fit.threads) for name, (_, fit) in plmc.items()}}  # fmt: skip
    for name, (iterations, wall, per, n_threads) in rows.items():
        p = precision[name]
        print(f"| {name} plmDCA | {p[ks['L/5']]:.3f} | {p[ks['L/2']]:.3f} | {p[ks['L']]:.3f} | "
              f"{loss[name]:.4f} | {obj[name]:.6f} | {iterations} | {wall:.1f} | "
              f"{'' if per is None else f'{per:.3g}'} | {n_threads} |")
    print(f"project objective at its fit, couplings' products in float64: {obj64:.9f} "
          f"(float32 products: {obj['project']:.9f}, difference {obj['project'] - obj64:.1e})")
    versions = {name: plmc_version(binary) for name, (binary, _) in plmc.items()}
    own = {name: contacts.precision_at(fit.own_scores, distances, sep, threshold, [L],
                                       columns)[L]
           for name, (_, fit) in plmc.items()}  # fmt: skip
    for name, (binary, fit) in plmc.items():
        print(f"{name}: {binary} ({versions[name]}), {fit.options}; its weights' sum "
              f"{fit.weights.sum():.1f} (project's M_eff {m_eff:.1f}, max |difference| of the "
              f"weights {np.max(np.abs(fit.weights - weights[split.train])):.1e}); its last "
              f"objective over L M_eff "
              f"{'?' if fit.objective is None else f'{fit.objective / (L * m_eff):.6f}'} "
              f"(the project's at its parameters {obj[name]:.6f}); P@L of its own scores "
              f"{own[name]:.3f}")
    corr = {name: agreement(scores["project"], scores[name], sep, columns)
            for name in scores if name != "project"}  # fmt: skip
    n_pairs = len(contacts.ranked_pairs(scores["project"], sep, columns)[0])
    print(f"\nAPC Frobenius scores over the {n_pairs} pairs with j - i >= {sep}, against the "
          "project's: " + "; ".join(f"{name} Pearson r {a:.4f}, Spearman rho {b:.4f}"
                                    for name, (a, b) in corr.items()))
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
        "project_wall_s", "pydca_wall_s", "pydca_threads", "reference_P_L",
        "project_threads", "project_s_per_iteration", "plmc_version", "plmc_sha256",
        "plmc_precision", "plmc_threads", "plmc_options", "plmc_M_eff", "plmc_iterations",
        "plmc_stop", *(f"plmc_{n}" for n in names), "plmc_own_P_L", "plmc_heldout_loss",
        "plmc_objective", "plmc_project_objective", "plmc_scores_pearson",
        "plmc_scores_spearman", "plmc_s_per_iteration", "plmc_wall_s"))  # fmt: skip
    row = dict(
        family=family, subsample=subsample, L=L, M_train=len(train), M_test=int(test.sum()),
        realisation=r, M_eff=m_eff, M_distinct=len(distinct), M_eff_pydca=m_eff_pd,
        lambda_h=lam_h, lambda_J=lam_j, pydca_lambda_h=pd_h, pydca_lambda_J=pd_j,
        pydca_seqid=seqid, max_iter=cfg["max_iter"], project_iterations=m["iterations"],
        pydca_iterations=pd_iterations, project_converged=m["converged"],
        **{f"{name}_{n}": precision[name][ks[k]]
           for name in ("project", "pydca") for n, k in zip(names, ("L/5", "L/2", "L"),
                                                            strict=True)},
        project_heldout_loss=loss["project"], pydca_heldout_loss=loss["pydca"],
        project_objective=obj["project"], project_objective_f64=obj64,
        pydca_project_objective=obj["pydca"],
        grad_tol=cfg["grad_tol"], scores_pearson=corr["pydca"][0],
        scores_spearman=corr["pydca"][1], project_wall_s=t_ours, pydca_wall_s=t_pd,
        pydca_threads=args.pydca_threads, reference_P_L=ref, project_threads=threads,
        project_s_per_iteration=per_ours)  # fmt: skip
    for name, (binary, fit) in plmc.items() or {None: (None, None)}.items():  # a row w/o plmc
        rec.add(**row, **({} if fit is None else dict(
            plmc_version=versions[name],
            plmc_sha256=hashlib.sha256(binary.read_bytes()).hexdigest()[:12],
            plmc_precision=fit.precision, plmc_threads=fit.threads, plmc_options=fit.options,
            plmc_M_eff=float(fit.weights.sum()), plmc_iterations=fit.iterations,
            plmc_stop=fit.stop,
            **{f"plmc_{n}": precision[name][ks[k]]
               for n, k in zip(names, ("L/5", "L/2", "L"), strict=True)},
            plmc_own_P_L=own[name], plmc_heldout_loss=loss[name],
            plmc_objective=None if fit.objective is None else fit.objective / (L * m_eff),
            plmc_project_objective=obj[name], plmc_scores_pearson=corr[name][0],
            plmc_scores_spearman=corr[name][1], plmc_s_per_iteration=fit.s_per_iteration,
            plmc_wall_s=fit.wall_s)))  # fmt: skip
    print(f"\nappended {max(len(plmc), 1)} row(s) to {rec.path}")


if __name__ == "__main__":
    main()
