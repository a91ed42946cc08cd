# The Potts paper: couplings and Gibbs samples per realisation, MLM training per (architecture,
# realisation), pseudo-likelihood baselines, the sample-complexity sweep, the replica theory,
# tables across realisations, figures. Config slices, threads, resources, captions:
# workflow_lib/studies/potts_paper/registry.py; the stages: workflow_lib/studies/potts_paper/.

from workflow_lib.mlm.architectures import (
    interpolation_runs,
    transformer_layers,
    wildcard_pattern,
)

POTTS = STUDY["potts_paper"]
POTTS_STAGES = "workflow_lib.studies.potts_paper"
REALISATIONS = realisations(CFG, POTTS)  # every one, or those of the run's shard
ARCHS = CFG["training"]["architectures"] + interpolation_runs(CFG["training"]["interpolation_a"])
TARGETS["potts_paper"] = [*figures("potts_paper"), f"{RESULTS}/{POTTS.claims}"]
# Among the jobs ready to run, Snakemake starts those of higher priority first: the run's critical
# path, the data every model waits for (couplings, samples), then training, its longest jobs
# first (the transformers', the deeper first: the 3-layer transformer's is the longest job).
DATA_PRIORITY = 10


per_realisation(
    "potts_couplings",
    f"{POTTS_STAGES}.stages_data:couplings",
    REALISATIONS,
    output={"couplings": f"{RESULTS}/potts/r{{r}}/couplings.h5"},
    log="potts/r{r}/couplings",
    priority=DATA_PRIORITY,
)


per_realisation(
    "potts_sample",
    f"{POTTS_STAGES}.stages_data:sample",
    REALISATIONS,
    input={"couplings": f"{RESULTS}/potts/r{{r}}/couplings.h5"},
    output={"samples": f"{RESULTS}/potts/r{{r}}/samples.h5"},
    log="potts/r{r}/samples",
    priority=DATA_PRIORITY,
)


# Training: each job fits its chunk's realisations of one architecture side by side in one
# program (the registry's side_by_side), one artefact per realisation.
per_realisation(
    "potts_train",
    f"{POTTS_STAGES}.stages_fits:train",
    REALISATIONS,
    input={"samples": f"{RESULTS}/potts/r{{r}}/samples.h5"},
    output={"model": f"{RESULTS}/train/{{arch}}/r{{r}}.h5"},
    log="train/{arch}/r{r}",
    constraints={"arch": wildcard_pattern()},
    priority=lambda wildcards: 1 + transformer_layers(wildcards.arch),
)


per_realisation(
    "potts_plm",
    f"{POTTS_STAGES}.stages_fits:plm",
    REALISATIONS,
    input={"samples": f"{RESULTS}/potts/r{{r}}/samples.h5"},
    output={"fit": f"{RESULTS}/plm/{{kind}}/r{{r}}.h5"},
    log="plm/r{r}",
    each={"kind": CFG["plm"]["kinds"]},
)


per_realisation(
    "potts_sample_complexity",
    f"{POTTS_STAGES}.stages_fits:sample_complexity",
    REALISATIONS,
    input={"samples": f"{RESULTS}/potts/r{{r}}/samples.h5"},
    output={"curve": f"{RESULTS}/sample_complexity/r{{r}}.h5"},
    log="sample_complexity/r{r}",
)


rule potts_replica_theory:
    output:
        theory=f"{RESULTS}/theory/replica_theory.h5",
    log:
        f"{LOGS}/theory/replica_theory.log",
    benchmark:
        f"{BENCHMARKS}/theory/replica_theory.tsv"
    params:
        **stage_params("potts_replica_theory", f"{POTTS_STAGES}.stages_theory:replica_theory"),
    threads: threads("potts_replica_theory")
    resources:
        **resources("potts_replica_theory"),
    conda:
        ENV
    shell:
        STAGE


rule potts_replica_sims:
    output:
        simulations=f"{RESULTS}/theory/replica_simulations.h5",
    log:
        f"{LOGS}/theory/replica_simulations.log",
    benchmark:
        f"{BENCHMARKS}/theory/replica_simulations.tsv"
    params:
        **stage_params("potts_replica_sims", f"{POTTS_STAGES}.stages_theory:replica_sims"),
    threads: threads("potts_replica_sims")
    resources:
        **resources("potts_replica_sims"),
    conda:
        ENV
    shell:
        STAGE


# The study's tables, claims table and figures (rules/common.smk)
study_tables(
    "potts_tables",
    f"{POTTS_STAGES}.stages_results:aggregate",
    samples=expand(f"{RESULTS}/potts/r{{r}}/samples.h5", r=REALISATIONS),
    train=expand(f"{RESULTS}/train/{{arch}}/r{{r}}.h5", arch=ARCHS, r=REALISATIONS),
    plm=expand(f"{RESULTS}/plm/{{kind}}/r{{r}}.h5", kind=CFG["plm"]["kinds"], r=REALISATIONS),
    sample_complexity=expand(f"{RESULTS}/sample_complexity/r{{r}}.h5", r=REALISATIONS),
    theory=rules.potts_replica_theory.output.theory,
    simulations=rules.potts_replica_sims.output.simulations,
)
study_claims("potts_paper")
study_figure("potts_paper")
