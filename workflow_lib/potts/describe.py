"""Text summary of a Potts samples artefact's beta tuning, production attempts, held-out
statistics and tempering diagnostics (shown by ``python -m workflow_lib inspect``)."""

from __future__ import annotations

import numpy as np

from workflow_lib.core.artefacts import read_artefact
from workflow_lib.potts.artefact import POTTS_SAMPLES


def describe_sampling(path: str) -> str:
    """The beta-tuning rounds, production attempts and held-out statistics of a samples
    artefact, as text (shown by ``inspect``)."""
    art = read_artefact(path, POTTS_SAMPLES)
    a = art.attrs
    lines = ["  sampling:",
             f"    protocol {a['protocol']}, beta {a['beta']:.4f} (tuned: {a['beta_tuned']})",
             f"    mean Hamming {a['mean_hamming']:.4f}"
             + (f", target {a['target_hamming']} +- {a['tolerance']}" if a["beta_tuned"] else "")]
    if "tuning/betas" in art.data:
        for r, (b, h, s, e) in enumerate(zip(art["tuning/betas"], art["tuning/hamming"],
                                             art["tuning/hamming_sem"], art["tuning/estimate"],
                                             strict=True)):
            pts = ", ".join(f"{bi:.3f}:{hi:.3f}+-{si:.3f}" for bi, hi, si in zip(b, h, s,
                                                                               strict=True))
            lines.append(f"    tuning round {r + 1}: estimate {e:.4f}; beta:Hamming {pts}")
    if a["beta_tuned"]:
        lines.append(f"    tuning: {a['tuning_seconds']:.1f} s")
    n = len(art["attempts/beta"])
    seconds = a.get("attempt_seconds", np.full(n, np.nan))
    rounds = art["attempts/round"] if "attempts/round" in art.data else np.arange(n)
    for i, (b, h, t, r) in enumerate(zip(art["attempts/beta"], art["attempts/hamming"], seconds,
                                         rounds, strict=True)):
        kept = " (kept)" if b == a["beta"] and h == a["mean_hamming"] else ""
        lines.append(f"    attempt {i + 1} (round {r + 1}): beta {b:.4f} -> data set Hamming "
                     f"{h:.4f} ({t:.1f} s){kept}")
    lines.append(f"    distinct sequences: train {a['n_distinct_train']}, test "
                 f"{a['n_distinct_test']}; test in train: {a['test_in_train_fraction']:.3f}")
    if "tempering/swap_acceptance" in art.data:
        rungs = np.array2string(art["tempering/ladder"], precision=3)
        acc = np.array2string(art["tempering/swap_acceptance"], precision=3)
        lines.append(f"    tempering: ladder {rungs}, swap acceptance {acc}, "
                     f"round trips {a['round_trips']}")
    return "\n".join(lines)

