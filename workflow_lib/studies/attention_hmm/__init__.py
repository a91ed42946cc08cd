"""Attention paths on the hidden-Markov-chain task (Tiberi et al., NeurIPS 2024, Fig. 2)."""
