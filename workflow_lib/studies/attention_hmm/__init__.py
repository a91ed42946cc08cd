"""Attention paths on the hidden-Markov-chain task (Tiberi et al., NeurIPS 2024, Fig. 2)."""

ORDER = 20  # its place among the studies (workflow_lib.core.studies)
