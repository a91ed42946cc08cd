# The template study: the squares per realisation, their table and the claims table. Config
# slices, threads, resources: workflow_lib/studies/template/registry.py; the stages:
# workflow_lib/studies/template/stages.py. Copied to rules/<name>.smk, it is the study's rules.

TEMPLATE = STUDY["template"]
TEMPLATE_STAGES = "workflow_lib.studies.template.stages"
TEMPLATE_REALISATIONS = realisations(CFG, TEMPLATE)  # every one, or those of the run's shard
TARGETS["template"] = [f"{RESULTS}/{TEMPLATE.claims}"]  # what it adds to the default target


per_realisation(
    "template_squares",
    f"{TEMPLATE_STAGES}:template_squares",
    TEMPLATE_REALISATIONS,
    output={"squares": f"{RESULTS}/template/r{{r}}/squares.h5"},
    log="template/r{r}/squares",
)


# The study's tables and claims table (rules/common.smk)
study_tables(
    "template_tables",
    f"{TEMPLATE_STAGES}:template_tables",
    squares=expand(f"{RESULTS}/template/r{{r}}/squares.h5", r=TEMPLATE_REALISATIONS),
)
study_claims("template")
