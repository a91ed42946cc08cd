"""Attention paths on one-shot Omniglot (Tiberi et al., NeurIPS 2024, Fig. 3)."""

ORDER = 30  # its place among the studies (workflow_lib.core.studies)
