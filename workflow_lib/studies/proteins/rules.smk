# Protein families: each alignment prepared once, every model fitted per family and held-out
# split, tables, claims and figures. Its own target, `snakemake proteins`; in the default target
# when proteins.enabled. Params, threads, resources, captions: registry.py.

import os
import re

from workflow_lib.proteins.fitting import model_names

PROTEINS = STUDY["proteins"]
PROT = CFG["proteins"]
PROT_DIR = f"{RESULTS}/proteins"
PROT_FAMILIES = [each["name"] for each in PROT["families"]]
PROT_MODELS = model_names(PROT)
PROT_FIGURES = expand(f"{RESULTS}/figures/{{panel}}.{{ext}}",
                      panel=[panel.name for panel in PROTEINS.panels], ext=("png", "pdf"))
PROT_TARGETS = [*PROT_FIGURES, f"{RESULTS}/{PROTEINS.claims}"]
TARGETS["proteins"] = PROT_TARGETS if PROT["enabled"] else []


def protein_inputs(wildcards):
    """The family's alignment and, when given, its distances (given relative to the Snakefile's
    folder, or absolute)."""
    entry = {each["name"]: each for each in PROT["families"]}[wildcards.family]
    files = {"alignment": entry["alignment"]}
    if "distances" in entry:
        files["distances"] = entry["distances"]
    # relative to the working directory, so that a results folder moved with its checkout
    # keeps its input paths (an absolute path would change and re-run the family)
    return {k: os.path.relpath(os.path.join(workflow.basedir, v)) for k, v in files.items()}


wildcard_constraints:
    family="|".join(map(re.escape, PROT_FAMILIES)),
    model="|".join(map(re.escape, PROT_MODELS)),


rule proteins:
    """The protein study's figures and claims, whether or not ``proteins.enabled`` puts them in
    the default target."""
    input:
        PROT_TARGETS,


rule protein_data:
    input:
        unpack(protein_inputs),
    output:
        data=f"{PROT_DIR}/{{family}}/data.h5",
    params:
        job=job("protein_data"),
    threads: threads("protein_data")
    resources:
        **resources("protein_data"),
    shell:
        STAGE


rule protein_fit:
    input:
        data=rules.protein_data.output.data,
    output:
        fit=f"{PROT_DIR}/{{family}}/r{{r}}/{{model}}.h5",
    params:
        job=job("protein_fit"),
    threads: threads("protein_fit")
    resources:
        **resources("protein_fit"),
    shell:
        STAGE


rule protein_tables:
    input:
        data=expand(f"{PROT_DIR}/{{family}}/data.h5", family=PROT_FAMILIES),
        fits=expand(f"{PROT_DIR}/{{family}}/r{{r}}/{{model}}.h5", family=PROT_FAMILIES,
                    r=range(PROT["realisations"]), model=PROT_MODELS),
    output:
        **{name: f"{PROT_DIR}/tables/{name}.csv" for name in PROTEINS.tables},
    params:
        job=job("protein_tables"),
    threads: threads("protein_tables")
    resources:
        **resources("protein_tables"),
    shell:
        STAGE


rule protein_claims:
    input:
        **{name: f"{PROT_DIR}/tables/{name}.csv" for name in PROTEINS.tables},
    output:
        claims=f"{RESULTS}/{PROTEINS.claims}",
    params:
        job=job("protein_claims"),
    threads: threads("protein_claims")
    resources:
        **resources("protein_claims"),
    shell:
        STAGE


rule protein_figure:
    input:
        unpack(lambda wc: {t: f"{PROT_DIR}/tables/{t}.csv" for t in PROTEINS.panel(wc.panel).tables}),
    output:
        png=report(f"{RESULTS}/figures/{{panel}}.png", caption=CAPTION, category=PROTEINS.title),
        pdf=f"{RESULTS}/figures/{{panel}}.pdf",
    wildcard_constraints:
        panel="|".join(panel.name for panel in PROTEINS.panels),
    params:
        job=job("protein_figure"),
        caption=caption("proteins"),
    threads: threads("protein_figure")
    resources:
        **resources("protein_figure"),
    shell:
        STAGE
