"""Generalised Potts model: couplings, exact conditionals, enumeration and Gibbs sampling."""
