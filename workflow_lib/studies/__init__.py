"""The studies, one folder each: its registry (rules, tables, panels, captions, resources), its
stages, tables, figures and claims. Its Snakemake rules are ``rules/<study>.smk`` in the
workflow's checkout; ``workflow_lib.registry.STUDY_NAMES`` lists the studies."""
