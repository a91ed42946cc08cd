"""What self-attention learns from masked language modelling on generalised Potts data.

Importing the package enables float64 in JAX (``jax_enable_x64``) because the theory needs it;
hot paths (sampler, training) pass float32 explicitly. It does so without importing JAX
(``workflow_lib.core.backend.set_jax_option``), so that jobs that never compute with JAX (figures,
claims, the report) do not pay for JAX's import.
"""

from workflow_lib.core.backend import set_jax_option

set_jax_option("jax_enable_x64", True)

__version__ = "0.1.0"
