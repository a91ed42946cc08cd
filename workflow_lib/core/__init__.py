"""The foundation: the config and its schema, the registry types and the studies' discovery,
random keys, HDF5 artefacts, figure files, code digests, the processor and backend a job runs on,
and which realisations a run or its shard holds. It imports nothing of ``workflow_lib`` outside
this folder."""
