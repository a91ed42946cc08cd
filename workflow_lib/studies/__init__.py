"""The studies, one folder each: its registry (rules, tables, panels, captions, resources), its
``rules.smk``, its stages, tables, figures and claims. ``common.smk`` holds what every study's
rules use; ``workflow_lib.registry.STUDY_NAMES`` lists the studies."""
