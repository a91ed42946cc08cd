"""Attention paths: the statistical-mechanics theory of deep multi-head attention (Tiberi et al.,
NeurIPS 2024) on the hidden-Markov-chain task of the paper's Fig. 2.

``model`` (attention, path-attended inputs Φ, kernels through Φ, effective weights), ``tasks``
(hidden Markov chain data, heads and networks), ``theory`` (the action S(U), its minimum, the
predictor), ``sampling`` (NUTS on the weight posterior).
"""
