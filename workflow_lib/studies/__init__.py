"""The studies, one folder each: its registry (rules, tables, panels, captions, resources), its
stages, tables, figures and claims, and in its ``__init__`` its ``ORDER``, its place among the
studies. Its Snakemake rules are ``rules/<study>.smk`` in the workflow's checkout;
``workflow_lib.core.studies`` finds the studies."""
