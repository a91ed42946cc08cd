"""Attention paths on one-shot Omniglot (Tiberi et al., NeurIPS 2024, Fig. 3)."""
