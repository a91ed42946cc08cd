# Protein families: each alignment prepared once, every model fitted per family and held-out
# split, tables, claims and figures. Its own target, `snakemake proteins`; in the default target
# when proteins.enabled, or in a shard that names it in shard_studies. Config slices, threads,
# resources, captions: workflow_lib/studies/proteins/registry.py.

import re

from workflow_lib.proteins.fitting import model_names

PROTEINS = STUDY["proteins"]
PROT = CFG["proteins"]
PROT_DIR = f"{RESULTS}/proteins"
PROT_FAMILIES = [each["name"] for each in PROT["families"]]
PROT_MODELS = model_names(PROT)
PROT_TARGETS = [*figures("proteins"), f"{RESULTS}/{PROTEINS.claims}"]
TARGETS["proteins"] = (PROT_TARGETS if PROT["enabled"] or "proteins" in (CFG["shard_studies"] or [])
                      else [])
# each family's alignment and, when given, its distances (as the config gives them: relative to
# the Snakefile's folder, or absolute)
PROT_INPUTS = {
    each["name"]: {key: from_workflow(each[key])
                   for key in ("alignment", "distances") if key in each}
    for each in PROT["families"]
}


wildcard_constraints:
    family="|".join(map(re.escape, PROT_FAMILIES)),
    model="|".join(map(re.escape, PROT_MODELS)),


rule proteins:
    """The protein study's figures and claims, whether or not ``proteins.enabled`` puts them in
    the default target; a shard refuses it (``own_target``)."""
    input:
        lambda wildcards: own_target("proteins", PROT_TARGETS),


rule protein_data:
    input:
        unpack(lambda wildcards: PROT_INPUTS[wildcards.family]),
    output:
        data=f"{PROT_DIR}/{{family}}/data.h5",
    log:
        f"{LOGS}/proteins/{{family}}/data.log",
    benchmark:
        f"{BENCHMARKS}/proteins/{{family}}/data.tsv"
    params:
        **stage_params("protein_data"),
    threads: threads("protein_data")
    resources:
        **resources("protein_data"),
    conda:
        ENV
    shell:
        STAGE


rule protein_fit:
    input:
        data=rules.protein_data.output.data,
    output:
        fit=f"{PROT_DIR}/{{family}}/r{{r}}/{{model}}.h5",
    log:
        f"{LOGS}/proteins/{{family}}/r{{r}}/{{model}}.log",
    benchmark:
        f"{BENCHMARKS}/proteins/{{family}}/r{{r}}/{{model}}.tsv"
    params:
        **stage_params("protein_fit"),
    threads: threads("protein_fit")
    resources:
        **resources("protein_fit"),
    conda:
        ENV
    shell:
        STAGE


# The study's tables, claims table and figures (rules/common.smk)
study_tables(
    "protein_tables",
    data=expand(f"{PROT_DIR}/{{family}}/data.h5", family=PROT_FAMILIES),
    fits=expand(f"{PROT_DIR}/{{family}}/r{{r}}/{{model}}.h5", family=PROT_FAMILIES,
                r=realisations(CFG, PROTEINS), model=PROT_MODELS),
)
study_claims("proteins")
study_figure("proteins")
