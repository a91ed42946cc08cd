"""Gaussian model of masked language modelling and its replica theory (Rende et al. 2024,
eqs. 6-8, App. B, Fig. 3 left).

- :mod:`.gaussian`: the relaxed (Gaussian) Potts model, its teacher and label noise.
- :mod:`.saddle`: replica saddle point and the equivalent closed-form κ formula (eqs. 7-8, App. B).
- :mod:`.simulate`: ridge / min-norm simulations of the learning problem (eq. 6, Fig. 3 left).
"""
