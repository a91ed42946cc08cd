"""The template of a study: copy this folder to ``workflow_lib/studies/<name>/`` and its
``rules.smk`` to ``rules/<name>.smk``, write ``template`` as ``<name>`` in each, and give
``ORDER`` a place of its own (``docs/pipeline.md``, "A new study"). As it stands it is no study:
a folder whose name starts with ``_`` is not found (``workflow_lib.core.studies``)."""

ORDER = 1000  # its place among the studies: the report, the docs and the schema follow it
