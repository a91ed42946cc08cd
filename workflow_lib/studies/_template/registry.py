"""The template study's rules, tables and claims: one rule per realisation (``template_squares``:
the squares of the first ``template.n`` integers, offset by the realisation), its table across
realisations and its claims table."""

from __future__ import annotations

from workflow_lib.core.registry import Rule, Study, claims_rule, constant, no_params


def _realisation(cfg, wc) -> dict:
    """The slice of one realisation's job: the seed, the realisation (from the ``r`` wildcard)
    and the study's section."""
    return {"seed": cfg["seed"], "realisation": int(wc["r"]), "template": cfg["template"]}


STUDY = Study(
    name="template",
    title="Template",
    paper="none",
    rules=(
        # one realisation per job; chunk="compute.realisations_per_job" would run that many in
        # one process
        Rule("template_squares", _realisation, constant(1), constant(500)),
        Rule("template_tables", no_params, constant(1), constant(500), local=True),
        claims_rule("template_claims", "template"),
    ),
    tables=("squares",),
    panels=(),
    claims="template/tables/claims.csv",
    claims_of="workflow_lib.studies.template.claims:template_claims",
    realisations="template.realisations",  # the config key of how many it has: shards cut it
)
