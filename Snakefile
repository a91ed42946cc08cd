"""What self-attention learns from masked language modelling on generalised Potts data.

    snakemake --cores 2                                # the quick preset (config.yaml)
    snakemake --cores 8 --configfile config/paper.yaml # the papers' protocol
    snakemake --profile slurm                          # on a SLURM cluster (slurm/config.yaml)
    snakemake --report report.html                     # every figure with its caption
"""


configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/potts.smk"
include: "rules/train.smk"
include: "rules/theory.smk"
include: "rules/figures.smk"
include: "rules/paths.smk"
include: "rules/omniglot.smk"


rule all:
    default_target: True
    input:
        expand(f"{RESULTS}/figures/{{panel}}.{{ext}}", panel=PANELS, ext=("png", "pdf")),
        PATHS_FIGURES,
        OMNIGLOT_FIGURES,


derive_stage_directives()
