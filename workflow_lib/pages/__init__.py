"""The pages written from the workflow and its runs: the results pages, the report's front page,
the configuration, criteria, performance and pipeline pages, the README's generated blocks, and
the figure rules' stage. It imports ``core``, ``claims`` and the studies' modules."""
