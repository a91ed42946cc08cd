"""What self-attention learns from masked language modelling on generalised Potts data.

    snakemake --cores 2                                # the quick preset (config.yaml)
    snakemake --cores 8 --configfile config/paper.yaml # the papers' protocol
    snakemake --profile slurm                          # on a SLURM cluster (slurm/config.yaml)
"""


configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/potts.smk"


rule all:
    default_target: True
    input:
        samples=expand(f"{RESULTS}/potts/r{{r}}/samples.h5", r=REALISATIONS),
