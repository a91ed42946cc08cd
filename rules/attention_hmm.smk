# Attention paths on the hidden-Markov-chain task: path-attended inputs, the order parameter U(N)
# with GP lines, posterior samples at small N, tables and the Fig. 2c-e panels. Config slices,
# threads, resources, captions: workflow_lib/studies/attention_hmm/registry.py; the stages:
# workflow_lib/studies/attention_hmm/.

HMM = STUDY["attention_hmm"]
HMM_STAGES = "workflow_lib.studies.attention_hmm"
PATHS = CFG["paths"]
PATHS_EXPERIMENTS = PATHS["experiments"]
PATHS_REALISATIONS = realisations(CFG, HMM)  # every one, or those of the run's shard
TARGETS["attention_hmm"] = [*figures("attention_hmm"), f"{RESULTS}/{HMM.claims}"]


per_realisation(
    "paths_features",
    f"{HMM_STAGES}.stages:paths_features",
    PATHS_REALISATIONS,
    output={"features": f"{RESULTS}/paths/r{{r}}/{{experiment}}/features.h5"},
    log="paths/r{r}/features",
    each={"experiment": PATHS_EXPERIMENTS},
)


per_realisation(
    "paths_theory",
    f"{HMM_STAGES}.stages:paths_theory",
    PATHS_REALISATIONS,
    input={"features": f"{RESULTS}/paths/r{{r}}/{{experiment}}/features.h5"},
    output={"theory": f"{RESULTS}/paths/r{{r}}/{{experiment}}/theory.h5"},
    log="paths/r{r}/theory",
    each={"experiment": PATHS_EXPERIMENTS},
)


per_realisation(
    "paths_sample",
    f"{HMM_STAGES}.stages:paths_sample",
    PATHS_REALISATIONS,
    input={"features": f"{RESULTS}/paths/r{{r}}/{{experiment}}/features.h5"},
    output={"samples": f"{RESULTS}/paths/r{{r}}/{{experiment}}/samples_N{{N}}.h5"},
    log="paths/r{r}/samples",
    each={"experiment": PATHS_EXPERIMENTS, "N": PATHS["sample_widths"]},
)


# The study's tables, claims table and figures (rules/common.smk)
study_tables(
    "paths_tables",
    f"{HMM_STAGES}.stages_results:paths_tables",
    theory=expand(
        f"{RESULTS}/paths/r{{r}}/{{experiment}}/theory.h5",
        r=PATHS_REALISATIONS, experiment=PATHS_EXPERIMENTS,
    ),
    samples=expand(
        f"{RESULTS}/paths/r{{r}}/{{experiment}}/samples_N{{N}}.h5",
        r=PATHS_REALISATIONS, experiment=PATHS_EXPERIMENTS, N=PATHS["sample_widths"],
    ),
)
study_claims("attention_hmm")
study_figure("attention_hmm")
