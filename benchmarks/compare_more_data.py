"""The data set's floor against the amount of data: the factored pseudo-likelihood on one
realisation's training set and on ``--factor`` times more sequences from the same protocol.

    python benchmarks/compare_more_data.py results/paper/potts/r1/samples.h5 --factor 10 \
        --cache results/paper/more_data/r1.h5

The realisation's floor (the ``factored_from_truth`` fit) sits above the optimal loss of the true
conditionals; this asks whether that gap is the finite data set's (it shrinks with more data)
or the estimator's (it stays). From the realisation's couplings and tuned beta, ``--factor``
independent single chains (the paper's protocol: random start, the realisation's burn-in, one
configuration every ``sweeps_between`` sweeps) each save as many sequences as the training set
holds, batched in one call; the sequences are cached in ``--cache`` (HDF5, with the seed and the
protocol) and reused when it exists. Then, on the original training set and on the new one, the
``factored_from_truth`` and spectral-start ``factored`` fits (the ``plm`` defaults, the paper
preset's ``max_iter``) and, with ``--mlm-restarts``, factored attention trained by MLM (the
``--config``'s training section, its Adam restarts and L-BFGS polish), each scored on the
realisation's own test set. Prints one row per fit:
sequences (distinct), test loss, its ratio to the optimal loss, the loss on test sequences absent
from that training set, r(A, J), reconstruction error, convergence and wall time.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from dataclasses import replace
from pathlib import Path

import h5py
import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.core.artefacts import atomic_path, read_artefact
from workflow_lib.core.config import load_config, read_config_file, schema_defaults
from workflow_lib.mlm.plm import fit_plm
from workflow_lib.mlm.train import train_mlm
from workflow_lib.potts import gibbs
from workflow_lib.potts.artefact import load_samples
from workflow_lib.studies.potts_paper.stages_fits import plm_options, training_options


def more_sequences(samples: str, factor: int, seed: int, blocks: int) -> np.ndarray:
    """``factor * M`` new training sequences ``(factor * M, L)`` uint8 from ``factor`` chains."""
    train, _, J, U, beta = load_samples(samples)
    sampling = json.loads(read_artefact(samples, "potts-samples/1").attrs["config"])["sampling"]
    R, (M, L) = factor, train.shape
    saved, _ = gibbs.single_chain(
        jax.random.split(jax.random.key(seed), R), jnp.broadcast_to(J, (R, L, L)),
        jnp.broadcast_to(U, (R, *U.shape)), jnp.full(R, beta), n_save=M,
        burn_in=int(sampling["burn_in"]), sweeps_between=int(sampling["sweeps_between"]),
        blocks=blocks,
    )
    return saved.reshape(R * M, L).astype(np.uint8)


def cached_sequences(a: argparse.Namespace) -> np.ndarray:
    if a.cache and Path(a.cache).exists():
        with h5py.File(a.cache) as f:
            if (f.attrs["seed"], f.attrs["factor"]) != (a.seed, a.factor):
                raise SystemExit(f"{a.cache} holds another seed or factor; remove it or pass "
                                 "another --cache")
            return f["train"][...]
    seqs = more_sequences(a.samples, a.factor, a.seed, a.blocks)
    if a.cache:
        with atomic_path(a.cache) as tmp, h5py.File(tmp, "w") as f:
            f["train"] = seqs
            f.attrs.update(seed=a.seed, factor=a.factor, source=str(a.samples))
    return seqs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("samples", help="a realisation's samples.h5 (potts-samples/1)")
    ap.add_argument("--factor", type=int, default=10)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--blocks", type=int, default=20, help="progress lines while sampling")
    ap.add_argument("--cache", default="", help="HDF5 file for the new sequences")
    ap.add_argument("--max-iter", type=int, default=2000, help="L-BFGS iterations (paper preset)")
    ap.add_argument("--mlm-restarts", type=int, default=0,
                    help="also train factored attention by MLM with this many restarts "
                         "(the config's training section otherwise)")
    ap.add_argument("--mlm-epochs", type=int, default=300)
    ap.add_argument("--config", default="config/paper.yaml", help="training section for --mlm")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    train, test, J, U, beta = load_samples(a.samples)
    config = load_config(read_config_file(a.config))
    mlm = replace(training_options(config["training"], "factored"), restarts=a.mlm_restarts,
                  epochs=a.mlm_epochs)
    t0 = time.perf_counter()
    more = cached_sequences(a)
    print(f"{len(more)} new sequences in {time.perf_counter() - t0:.0f} s")
    print("| training set | sequences (distinct) | fit | test loss | / optimal | held-out test "
          "loss | r(A, J) | recon. error | converged (iterations) | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, seqs in (("original", train), (f"{a.factor}x, new chains", more)):
        distinct = len(np.unique(seqs, axis=0))
        fits = [(f"PLM {kind}", fit_plm(kind, replace(plm_options(kind, schema_defaults("plm")),
                                                      max_iter=a.max_iter),
                                        seqs, test, J, U, beta, jax.random.key(a.seed)))
                for kind in ("factored_from_truth", "factored")]
        if a.mlm_restarts:
            fits.append((f"MLM factored, {a.mlm_restarts} restarts, {a.mlm_epochs} epochs",
                         train_mlm("factored", mlm, seqs, test, J, U, beta,
                                   jax.random.key(a.seed))))
        for fit, res in fits:
            m = res.metrics
            its = m.get("iterations", f"polish {m.get('polish_iterations', 0)}")
            print(f"| {name} | {len(seqs)} ({distinct}) | {fit} | {m['test_loss']:.4f} | "
                  f"{m['test_loss'] / res.optimal_loss:.3f} | {m['test_loss_heldout']:.3f} | "
                  f"{m['pearson_r']:.3f} | {m['recon_error']:.3f} | "
                  f"{'yes' if m['converged'] else 'NO'} ({its}) | {m['wall_seconds']:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
