"""Independent single-chain runs against parallel-tempering runs on one model, at one beta.

    python benchmarks/compare_tempering.py results/paper/potts/r0/couplings.h5 --beta 1.2

Runs ``--runs`` single chains from different random starts (batched, one call) and ``--runs``
parallel-tempering runs (``--replicas`` on a geometric ladder down to ``--ladder-min`` times
beta, batched), each with ``--burn-in`` sweeps and ``--n-save`` configurations ``--sweeps-between``
sweeps apart. Prints, per run, the mean energy per site of the saved configurations with its
error (s.e.m. from the integrated autocorrelation time of the saved series) and the mean pairwise
Hamming distance; then, per protocol, the spread of the run means against their errors
(chi^2 / dof of the mean energies), the swap acceptance and round trips of tempering, and spin
updates per second per chain (per replica for tempering) measured in the same process.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from workflow_lib.core.artefacts import read_artefact
from workflow_lib.potts import diagnostics, gibbs, model, tempering


def summarise(saved: np.ndarray, J: np.ndarray, U: np.ndarray) -> list[tuple[float, float, float]]:
    """Per run ``(mean energy per site, its s.e.m., mean pairwise Hamming)``; ``saved: (K, n,
    L)``."""
    L = J.shape[0]
    out = []
    for s in saved:
        e = np.asarray(model.energy(jnp.asarray(s), jnp.asarray(J), jnp.asarray(U))) / L
        sem = e.std(ddof=1) / np.sqrt(diagnostics.effective_sample_size(e))
        out.append((float(e.mean()), float(sem), model.mean_pairwise_hamming(s)))
    return out


def report(name: str, rows: list[tuple[float, float, float]]) -> None:
    e, se, h = (np.array(x) for x in zip(*rows, strict=True))
    for k, (ek, sk, hk) in enumerate(rows):
        print(f"| {name} | {k} | {ek:.4f} ± {sk:.4f} | {hk:.3f} |")
    w = 1 / np.maximum(se, 1e-12) ** 2
    mean = float(np.sum(w * e) / np.sum(w))
    chi2 = float(np.sum(w * (e - mean) ** 2) / (len(e) - 1))
    print(f"| {name}: across runs | mean ± sd | {e.mean():.4f} ± {e.std(ddof=1):.4f} "
          f"(chi2/dof {chi2:.1f}) | {h.mean():.3f} ± {h.std(ddof=1):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("couplings")
    ap.add_argument("--beta", type=float, required=True)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--ladder-min", type=float, default=0.5)
    ap.add_argument("--burn-in", type=int, default=10_000)
    ap.add_argument("--n-save", type=int, default=200)
    ap.add_argument("--sweeps-between", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    art = read_artefact(a.couplings, "potts-couplings/1", required=("J", "U"))
    J, U = art["J"], art["U"]
    L, K = J.shape[0], a.runs
    kw = dict(n_save=a.n_save, burn_in=a.burn_in, sweeps_between=a.sweeps_between)
    sweeps = a.burn_in + a.n_save * a.sweeps_between
    key_sc, key_pt = jax.random.split(jax.random.key(a.seed))

    t = time.perf_counter()
    saved, _ = gibbs.single_chain(
        jax.random.split(key_sc, K), jnp.broadcast_to(J, (K, L, L)),
        jnp.broadcast_to(U, (K, *U.shape)), jnp.full(K, a.beta), **kw,
    )
    t_sc = time.perf_counter() - t
    t = time.perf_counter()
    pt = tempering.parallel_tempering(
        jax.random.split(key_pt, K), jnp.asarray(J), jnp.asarray(U), jnp.full(K, a.beta),
        n_replicas=a.replicas, ladder_min=a.ladder_min, **kw,
    )
    t_pt = time.perf_counter() - t

    print(f"L = {L}, beta = {a.beta}, {K} runs each, burn-in {a.burn_in}, {a.n_save} saved "
          f"{a.sweeps_between} sweeps apart; tempering: {a.replicas} replicas, ladder "
          f"{np.array2string(pt.betas[0], precision=3)}")
    print("| protocol | run | energy per site (± s.e.m.) | mean Hamming |\n|---|---|---|---|")
    report("single chain", summarise(saved, J, U))
    report("parallel tempering", summarise(pt.saved, J, U))
    print(f"swap acceptance per rung pair (mean over runs): "
          f"{np.array2string(pt.swap_acceptance.mean(axis=0), precision=3)}; round trips per "
          f"run: {pt.round_trips.tolist()}")
    print(f"spin updates/s per chain: single chain {sweeps * L / t_sc:.3g} ({K} chains, "
          f"{t_sc:.0f} s), tempering {sweeps * L / t_pt:.3g} per replica ({K * a.replicas} "
          f"replicas, {t_pt:.0f} s); compilation included")


if __name__ == "__main__":
    main()
