# Attention paths on one-shot Omniglot (the paper's Fig. 3): the artefact rules follow the
# registry's FLOW (rule -> artefacts read, artefact written), then tables, claims and figures.
# Config slices, threads, resources, captions: workflow_lib/studies/omniglot/registry.py.

from workflow_lib.studies.omniglot.registry import FLOW

OMNIGLOT = STUDY["omniglot"]
OMNI_STAGES = "workflow_lib.studies.omniglot"
OMNI = CFG["omniglot"]
OMNI_DIR = f"{RESULTS}/omniglot"
OMNI_TARGETS = [*figures("omniglot"), f"{RESULTS}/{OMNIGLOT.claims}"]
TARGETS["omniglot"] = OMNI_TARGETS if OMNI["enabled"] else []  # in the default target
OMNI_FILES = {name: f"{OMNI_DIR}/{name}.h5" for _, name in FLOW.values()}
if OMNI["model_file"]:  # a shipped trained model replaces omniglot_train
    OMNI_FILES["model"] = from_workflow(OMNI["model_file"])
ARCHIVES = {k: from_workflow(os.path.join(OMNI["data_dir"], OMNI[k]))
            for k in ("train_archive", "test_archive")}


rule omniglot:
    """The Omniglot study's figures and claims, whether or not ``omniglot.enabled`` puts them in
    the default target."""
    input:
        OMNI_TARGETS,


# each artefact rule runs the stage of its name (workflow_lib/studies/omniglot/stages.py)
for name, (reads, writes) in FLOW.items():

    rule:
        name:
            name
        input:
            **({a: OMNI_FILES[a] for a in reads} | (ARCHIVES if name == "omniglot_data" else {})),
        output:
            **{writes: f"{OMNI_DIR}/{writes}.h5"},
        log:
            f"{LOGS}/omniglot/{writes}.log",
        benchmark:
            f"{BENCHMARKS}/omniglot/{writes}.tsv"
        params:
            **stage_params(name, f"{OMNI_STAGES}.stages:{name}"),
        threads: threads(name)
        resources:
            **resources(name),
        conda:
            ENV
        shell:
            STAGE


# The study's tables, claims table and figures (rules/common.smk)
study_tables(
    "omniglot_tables",
    f"{OMNI_STAGES}.stages_results:omniglot_tables",
    model=OMNI_FILES["model"],
    theory=OMNI_FILES["theory"],
    pruning=OMNI_FILES["pruning"],
    samples=[OMNI_FILES["samples"]] if OMNI["sample_width"] else [],
)
study_claims("omniglot")
study_figure("omniglot")
