"""Masked language modelling of Potts sequences (Rende et al. 2024, eqs. 2-5, Fig. 2).

- ``models``: factored attention (paper eq. 4) and its softmax ablation, the interpolated single
  layer of Fig. 2d, and the off-the-shelf post-LN transformer encoder (1 or 3 layers), as pure
  functions over parameter pytrees with one interface (``init``, ``predict``,
  ``predict_all_sites``);
- ``train``: MLM training with SGD/Adam, cosine decay, batched restarts and per-epoch test loss and
  attention-map reconstruction (``train_mlm`` -> ``TrainResult``);
- ``plm``: full-batch pseudo-likelihood baselines by L-BFGS, factored and unconstrained couplings
  (``fit_plm`` -> ``PLMResult``).
"""
