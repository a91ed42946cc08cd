"""A job's process: JAX's threads, backend and compilation cache, the environment jobs inherit,
the CPU time a job reports, and the checkpoints of its long loops. It imports ``core`` alone."""
