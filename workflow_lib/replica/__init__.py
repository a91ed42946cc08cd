"""Gaussian model of masked language modelling and its replica theory (spec §6, Fig. 3 left).

- :mod:`.gaussian`: the relaxed (Gaussian) Potts model, its teacher and label noise (§6.1).
- :mod:`.saddle`: replica saddle point and the equivalent closed-form κ formula (§6.3–6.4).
- :mod:`.simulate`: ridge / min-norm simulations of the learning problem (§6.2, §6.6).
"""
