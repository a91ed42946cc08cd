# The Potts paper: couplings and Gibbs samples per realisation, MLM training per (architecture,
# realisation), pseudo-likelihood baselines, the sample-complexity sweep, the replica theory,
# tables across realisations, figures. Config slices, threads, resources, captions:
# workflow_lib/studies/potts_paper/registry.py.

from workflow_lib.mlm.architectures import (
    interpolation_runs,
    transformer_layers,
    wildcard_pattern,
)
from workflow_lib.core.registry import chunk_label, chunk_rule, chunks

POTTS = STUDY["potts_paper"]
REALISATIONS = realisations(CFG, POTTS)  # every one, or those of the run's shard
ARCHS = CFG["training"]["architectures"] + interpolation_runs(CFG["training"])
TARGETS["potts_paper"] = [*figures("potts_paper"), f"{RESULTS}/{POTTS.claims}"]
# Among the jobs ready to run, Snakemake starts those of higher priority first: the run's critical
# path, the data every model waits for (couplings, samples), then training, its longest jobs
# first (the transformers', the deeper first: the 3-layer transformer's is the longest job).
DATA_PRIORITY = 10


per_realisation(
    "couplings",
    REALISATIONS,
    output={"couplings": f"{RESULTS}/potts/r{{r}}/couplings.h5"},
    log="potts/r{r}/couplings",
    priority=DATA_PRIORITY,
)


per_realisation(
    "sample",
    REALISATIONS,
    input={"couplings": f"{RESULTS}/potts/r{{r}}/couplings.h5"},
    output={"samples": f"{RESULTS}/potts/r{{r}}/samples.h5"},
    log="potts/r{r}/samples",
    priority=DATA_PRIORITY,
)


# Training: one rule per chunk of realisations (compute.realisations_per_job; a rule's outputs
# are fixed patterns): train_r0, train_r1, ... or train_r0_9, ..., each job fitting its chunk's
# realisations of one architecture side by side in one program (not in turn, as per_realisation
# rules do), one artefact per realisation.
for chunk in chunks(REALISATIONS, CFG["compute"]["realisations_per_job"]):

    rule:
        name:
            chunk_rule("train", chunk)
        input:
            **{f"samples_r{r}": f"{RESULTS}/potts/r{r}/samples.h5" for r in chunk},
        output:
            **{f"model_r{r}": f"{RESULTS}/train/{{arch}}/r{r}.h5" for r in chunk},
        log:
            f"{LOGS}/train/{{arch}}/{chunk_label(chunk)}.log",
        benchmark:
            f"{BENCHMARKS}/train/{{arch}}/{chunk_label(chunk)}.tsv"
        wildcard_constraints:
            arch=wildcard_pattern(),
        params:
            **stage_params("train", realisations=chunk),
        priority: lambda wildcards: 1 + transformer_layers(wildcards.arch)
        threads: threads("train")
        resources:
            **resources("train", realisations=chunk),
        conda:
            ENV
        shell:
            STAGE


per_realisation(
    "plm",
    REALISATIONS,
    input={"samples": f"{RESULTS}/potts/r{{r}}/samples.h5"},
    output={"fit": f"{RESULTS}/plm/{{kind}}/r{{r}}.h5"},
    log="plm/r{r}",
    each={"kind": CFG["plm"]["kinds"]},
)


per_realisation(
    "sample_complexity",
    REALISATIONS,
    input={"samples": f"{RESULTS}/potts/r{{r}}/samples.h5"},
    output={"curve": f"{RESULTS}/sample_complexity/r{{r}}.h5"},
    log="sample_complexity/r{r}",
)


rule replica_theory:
    output:
        theory=f"{RESULTS}/theory/replica_theory.h5",
    log:
        f"{LOGS}/theory/replica_theory.log",
    benchmark:
        f"{BENCHMARKS}/theory/replica_theory.tsv"
    params:
        **stage_params("replica_theory"),
    threads: threads("replica_theory")
    resources:
        **resources("replica_theory"),
    conda:
        ENV
    shell:
        STAGE


rule replica_sims:
    output:
        simulations=f"{RESULTS}/theory/replica_simulations.h5",
    log:
        f"{LOGS}/theory/replica_simulations.log",
    benchmark:
        f"{BENCHMARKS}/theory/replica_simulations.tsv"
    params:
        **stage_params("replica_sims"),
    threads: threads("replica_sims")
    resources:
        **resources("replica_sims"),
    conda:
        ENV
    shell:
        STAGE


# The study's tables, claims table and figures (rules/common.smk)
study_tables(
    "aggregate",
    samples=expand(f"{RESULTS}/potts/r{{r}}/samples.h5", r=REALISATIONS),
    train=expand(f"{RESULTS}/train/{{arch}}/r{{r}}.h5", arch=ARCHS, r=REALISATIONS),
    plm=expand(f"{RESULTS}/plm/{{kind}}/r{{r}}.h5", kind=CFG["plm"]["kinds"], r=REALISATIONS),
    sample_complexity=expand(f"{RESULTS}/sample_complexity/r{{r}}.h5", r=REALISATIONS),
    theory=rules.replica_theory.output.theory,
    simulations=rules.replica_sims.output.simulations,
)
study_claims("potts_paper")
study_figure("potts_paper")
