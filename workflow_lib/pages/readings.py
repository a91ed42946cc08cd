"""The two readings of the Potts paper's target distance, in words for the pages and the report.

Rende et al. tune β so that the mean Hamming distance between sampled sequences is 0.3,
"typical for protein families". Read literally (``beta_tuning.target_hamming: 0.3``), the data
are glassy: few distinct sequences. Read as the pairwise identity of a protein family (a distance
of 0.7), they are diverse (``docs/design/beta_tuning.md``).
"""

from __future__ import annotations

import math

PAPER_DISTANCE = 0.3
"""The paper's "mean Hamming distance 0.3"."""
IDENTITY_DISTANCE = 1 - PAPER_DISTANCE
"""The distance of the identity reading: an identity of 0.3."""
PAPER = f'the Potts paper\'s "mean Hamming distance {PAPER_DISTANCE:g}"'


def reading(target_hamming: float) -> str:
    """How a run tuned to the mean normalised Hamming distance ``target_hamming``
    (``beta_tuning.target_hamming``) reads the paper's distance, in words: the literal reading,
    the identity reading, or neither."""
    if math.isclose(target_hamming, PAPER_DISTANCE):
        return (f"the literal reading of {PAPER} (β tuned to a mean normalised Hamming distance "
                f"of {PAPER_DISTANCE:g}), whose data are glassy: few distinct sequences")
    if math.isclose(target_hamming, IDENTITY_DISTANCE):
        return (f"the identity reading of {PAPER} (an identity of {PAPER_DISTANCE:g}: β tuned to "
                f"a mean normalised Hamming distance of {IDENTITY_DISTANCE:g}), whose data are "
                "diverse")
    return (f"β tuned to a mean normalised Hamming distance of {target_hamming:g}, neither "
            f"reading of {PAPER}")
