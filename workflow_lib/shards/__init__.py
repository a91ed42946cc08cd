"""A run's manifest (what it is: its shard, config, realisations and code) and the snapshots of
its shards, merged into one run's snapshot. It imports ``core``, ``claims`` and ``pages``."""
