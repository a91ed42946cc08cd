# Attention paths on the hidden-Markov-chain task: path-attended inputs, the order parameter U(N)
# with GP lines, posterior samples at small N, tables and the Fig. 2c-e panels. Config slices,
# threads, resources, captions: workflow_lib/studies/attention_hmm/registry.py.

HMM = STUDY["attention_hmm"]
PATHS = CFG["paths"]
PATHS_EXPERIMENTS = PATHS["experiments"]
PATHS_REALISATIONS = realisations(CFG, HMM)  # every one, or those of the run's shard
TARGETS["attention_hmm"] = [*figures("attention_hmm"), f"{RESULTS}/{HMM.claims}"]


wildcard_constraints:
    experiment="|".join(PATHS_EXPERIMENTS) or "none",


rule paths_features:
    output:
        features=f"{RESULTS}/paths/r{{r}}/{{experiment}}/features.h5",
    log:
        f"{LOGS}/paths/r{{r}}/{{experiment}}/features.log",
    benchmark:
        f"{BENCHMARKS}/paths/r{{r}}/{{experiment}}/features.tsv"
    params:
        **stage_params("paths_features"),
    threads: threads("paths_features")
    resources:
        **resources("paths_features"),
    conda:
        ENV
    shell:
        STAGE


rule paths_theory:
    input:
        features=rules.paths_features.output.features,
    output:
        theory=f"{RESULTS}/paths/r{{r}}/{{experiment}}/theory.h5",
    log:
        f"{LOGS}/paths/r{{r}}/{{experiment}}/theory.log",
    benchmark:
        f"{BENCHMARKS}/paths/r{{r}}/{{experiment}}/theory.tsv"
    params:
        **stage_params("paths_theory"),
    threads: threads("paths_theory")
    resources:
        **resources("paths_theory"),
    conda:
        ENV
    shell:
        STAGE


rule paths_sample:
    input:
        features=rules.paths_features.output.features,
    output:
        samples=f"{RESULTS}/paths/r{{r}}/{{experiment}}/samples_N{{N}}.h5",
    log:
        f"{LOGS}/paths/r{{r}}/{{experiment}}/samples_N{{N}}.log",
    benchmark:
        f"{BENCHMARKS}/paths/r{{r}}/{{experiment}}/samples_N{{N}}.tsv"
    params:
        **stage_params("paths_sample"),
    threads: threads("paths_sample")
    resources:
        **resources("paths_sample"),
    conda:
        ENV
    shell:
        STAGE


rule paths_tables:
    input:
        theory=expand(
            f"{RESULTS}/paths/r{{r}}/{{experiment}}/theory.h5",
            r=PATHS_REALISATIONS, experiment=PATHS_EXPERIMENTS,
        ),
        samples=expand(
            f"{RESULTS}/paths/r{{r}}/{{experiment}}/samples_N{{N}}.h5",
            r=PATHS_REALISATIONS, experiment=PATHS_EXPERIMENTS, N=PATHS["sample_widths"],
        ),
    output:
        **{name: f"{RESULTS}/paths/tables/{name}.csv" for name in HMM.tables},
    log:
        f"{LOGS}/paths/tables/{HMM.tables[0]}.log",
    benchmark:
        f"{BENCHMARKS}/paths/tables/{HMM.tables[0]}.tsv"
    localrule: True
    params:
        **stage_params("paths_tables"),
    threads: threads("paths_tables")
    resources:
        **resources("paths_tables"),
    conda:
        ENV
    shell:
        STAGE


rule paths_claims:
    input:
        **{name: f"{RESULTS}/paths/tables/{name}.csv" for name in HMM.tables},
    output:
        claims=f"{RESULTS}/{HMM.claims}",
    log:
        f"{LOGS}/{stem(HMM.claims)}.log",
    benchmark:
        f"{BENCHMARKS}/{stem(HMM.claims)}.tsv"
    localrule: True
    params:
        **stage_params("paths_claims"),
    threads: threads("paths_claims")
    resources:
        **resources("paths_claims"),
    conda:
        ENV
    shell:
        STAGE


rule paths_figure:
    input:
        unpack(panel_inputs("attention_hmm", f"{RESULTS}/paths/tables")),
    output:
        png=report(f"{RESULTS}/figures/{{panel}}.png", caption=CAPTION, category=HMM.title),
        pdf=f"{RESULTS}/figures/{{panel}}.pdf",
    log:
        f"{LOGS}/figures/{{panel}}.log",
    benchmark:
        f"{BENCHMARKS}/figures/{{panel}}.tsv"
    wildcard_constraints:
        panel=panel_pattern("attention_hmm"),
    localrule: True
    params:
        **stage_params("paths_figure"),
        caption=caption("attention_hmm"),
    threads: threads("paths_figure")
    resources:
        **resources("paths_figure"),
    conda:
        ENV
    shell:
        STAGE
