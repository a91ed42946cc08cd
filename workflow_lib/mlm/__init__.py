"""Masked language modelling of Potts sequences (Rende et al. 2024, eqs. 2-5, Fig. 2).

- ``models``: factored attention (paper eq. 4) and its softmax ablation, the interpolated single
  layer of Fig. 2d, and the off-the-shelf post-LN transformer encoder (1 or 3 layers), as pure
  functions over parameter pytrees with one interface (``init``, ``predict``,
  ``predict_all_sites``); ``architectures``: the names and restarts of the config;
- ``train``: MLM training with the hyperparameters of ``options.TrainingOptions`` (``train_mlm``
  -> ``TrainResult``), built from ``objective`` (losses), ``plan`` (static sizes), ``batching``
  (mini-batches), ``evaluation`` (test losses and attention map), ``loop`` (the device program:
  SGD/Adam with cosine decay, batched restarts, per-epoch evaluation), ``progress`` (the
  progress reporter), ``compiled`` (compiled programs kept across calls) and ``polish`` (the
  L-BFGS polish);
- ``metrics``: reconstruction of ``J`` from an attention map, the l2 norm and the convergence
  criterion;
- ``plm``: full-batch pseudo-likelihood baselines by L-BFGS (``lbfgs``), factored and
  unconstrained couplings (``fit_plm`` with ``PLMOptions`` -> ``PLMResult``);
  ``sample_complexity``: the factored fit over the training-set size M (``curve`` -> ``Curve``,
  Fig. 3 right).
"""
