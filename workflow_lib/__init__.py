"""What self-attention learns from masked language modelling on generalised Potts data.

Importing the package enables float64 in JAX (``jax_enable_x64``) because the theory needs it;
hot paths (sampler, training) pass float32 explicitly.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
