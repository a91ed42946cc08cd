# Protein families: each alignment prepared once, every model fitted per family and held-out
# split, tables, claims and figures; with proteins.final_fit, every model fitted once more on all
# of a family's sequences, and from those fits the family's contact lists and contact map. Its
# own target, `snakemake proteins`; in the default target when proteins.enabled, or in a shard
# that names it in shard_studies (its tables only). Config slices, threads, resources, captions:
# workflow_lib/studies/proteins/registry.py.

import re

from workflow_lib.proteins.run_names import chosen_from, score_names
from workflow_lib.studies.proteins.families import candidates, family_models
from workflow_lib.studies.proteins.registry import CONTACT_MAP_CAPTION

PROTEINS = STUDY["proteins"]
PROT_STAGES = "workflow_lib.studies.proteins"
PROT = CFG["proteins"]
PROT_DIR = f"{RESULTS}/proteins"
PROT_CONTACTS = f"{PROT_DIR}/contacts"
PROT_FAMILIES = [each["name"] for each in PROT["families"]]
# each family's split fits: every model, factored attention's with the family's candidates
PROT_FITS = {family: family_models(CFG, family) for family in PROT_FAMILIES}
PROT_MODELS = list(dict.fromkeys(name for names in PROT_FITS.values() for name in names))
# a family's contact lists, one per final fit and score (a transformer's Jacobian scores too)
PROT_LISTS = [name for model in PROT["models"] for name in score_names(model)]
PROT_CONTACT_FILES = [*(f"{name}.tsv" for name in PROT_LISTS), "summary.csv", "contact_map.png",
                      "contact_map.pdf"]
PROT_TARGETS = [*figures("proteins"), f"{RESULTS}/{PROTEINS.claims}",
                *(expand(f"{PROT_CONTACTS}/{{family}}/{{file}}", family=PROT_FAMILIES,
                         file=PROT_CONTACT_FILES) if PROT["final_fit"] else [])]
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
        **stage_params("protein_data", f"{PROT_STAGES}.stages:protein_data"),
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
        **stage_params("protein_fit", f"{PROT_STAGES}.stages:protein_fit"),
    threads: threads("protein_fit")
    resources:
        **resources("protein_fit"),
    conda:
        ENV
    shell:
        STAGE


rule protein_final_fit:
    """One model (an entry of proteins.models) on every sequence of a family, in the
    configuration its split fits chose (``chosen_from``: factored attention's on the most splits,
    a transformer's stop)."""
    input:
        data=rules.protein_data.output.data,
        splits=lambda wildcards: expand(
            f"{PROT_DIR}/{wildcards.family}/r{{r}}/{{run}}.h5",
            r=realisations(CFG, PROTEINS),
            run=chosen_from(wildcards.model, *candidates(CFG, wildcards.family))),
    output:
        fit=f"{PROT_DIR}/{{family}}/final/{{model}}.h5",
    log:
        f"{LOGS}/proteins/{{family}}/final/{{model}}.log",
    benchmark:
        f"{BENCHMARKS}/proteins/{{family}}/final/{{model}}.tsv"
    wildcard_constraints:
        model="|".join(map(re.escape, PROT["models"])),
    params:
        **stage_params("protein_final_fit", f"{PROT_STAGES}.stages_final:protein_final_fit"),
    threads: threads("protein_final_fit")
    resources:
        **resources("protein_final_fit"),
    conda:
        ENV
    shell:
        STAGE


rule protein_contact_lists:
    """A family's contact lists (one per final fit and score, plmc's couplings-file columns),
    their summary and the family's contact map."""
    input:
        data=rules.protein_data.output.data,
        fits=lambda wildcards: expand(f"{PROT_DIR}/{wildcards.family}/final/{{model}}.h5",
                                      model=PROT["models"]),
    output:
        **{name.replace("-", "_"): f"{PROT_CONTACTS}/{{family}}/{name}.tsv"
           for name in PROT_LISTS},
        summary=f"{PROT_CONTACTS}/{{family}}/summary.csv",
        png=report(f"{PROT_CONTACTS}/{{family}}/contact_map.png", caption=CAPTION,
                   category=PROTEINS.title),
        pdf=f"{PROT_CONTACTS}/{{family}}/contact_map.pdf",
    log:
        f"{LOGS}/proteins/contacts/{{family}}.log",
    benchmark:
        f"{BENCHMARKS}/proteins/contacts/{{family}}.tsv"
    localrule: True
    params:
        **stage_params("protein_contact_lists",
                       f"{PROT_STAGES}.stages_contacts:protein_contact_lists"),
        caption=CONTACT_MAP_CAPTION,
    threads: threads("protein_contact_lists")
    resources:
        **resources("protein_contact_lists"),
    conda:
        ENV
    shell:
        STAGE


# The study's tables, claims table and figures (rules/common.smk)
study_tables(
    "protein_tables",
    f"{PROT_STAGES}.stages_results:protein_tables",
    data=expand(f"{PROT_DIR}/{{family}}/data.h5", family=PROT_FAMILIES),
    fits=[f"{PROT_DIR}/{family}/r{r}/{model}.h5" for family, models in PROT_FITS.items()
          for r in realisations(CFG, PROTEINS) for model in models],
)
study_claims("proteins")
study_figure("proteins")
