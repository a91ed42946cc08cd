# Attention paths on one-shot Omniglot (the paper's Fig. 3): the artefact rules follow the
# registry's FLOW (rule -> artefacts read, artefact written), then tables and figures. Config
# slices, threads, resources, captions: workflow_lib/studies/omniglot/registry.py.

from workflow_lib.studies.omniglot.registry import FLOW

OMNIGLOT = STUDY["omniglot"]
OMNI = CFG["omniglot"]
OMNI_DIR = f"{RESULTS}/omniglot"
OMNI_FIGURES = figures("omniglot")
TARGETS["omniglot"] = OMNI_FIGURES if OMNI["enabled"] else []  # in the default target
OMNI_FILES = {name: f"{OMNI_DIR}/{name}.h5" for _, name in FLOW.values()}
if OMNI["model_file"]:  # a shipped trained model replaces omniglot_train
    OMNI_FILES["model"] = from_workflow(OMNI["model_file"])
ARCHIVES = {k: from_workflow(os.path.join(OMNI["data_dir"], OMNI[k]))
            for k in ("train_archive", "test_archive")}


rule omniglot:
    """Every Omniglot figure, whether or not ``omniglot.enabled`` puts them in the default
    target."""
    input:
        OMNI_FIGURES,


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
            **stage_params(name),
        threads: threads(name)
        resources:
            **resources(name),
        conda:
            ENV
        shell:
            STAGE


rule omniglot_tables:
    input:
        model=OMNI_FILES["model"],
        theory=OMNI_FILES["theory"],
        pruning=OMNI_FILES["pruning"],
        samples=[OMNI_FILES["samples"]] if OMNI["sample_width"] else [],
    output:
        **{name: f"{OMNI_DIR}/tables/{name}.csv" for name in OMNIGLOT.tables},
    log:
        f"{LOGS}/omniglot/tables/{OMNIGLOT.tables[0]}.log",
    benchmark:
        f"{BENCHMARKS}/omniglot/tables/{OMNIGLOT.tables[0]}.tsv"
    localrule: True
    params:
        **stage_params("omniglot_tables"),
    threads: threads("omniglot_tables")
    resources:
        **resources("omniglot_tables"),
    conda:
        ENV
    shell:
        STAGE


rule omniglot_figure:
    input:
        unpack(panel_inputs("omniglot", f"{OMNI_DIR}/tables")),
    output:
        png=report(f"{RESULTS}/figures/{{panel}}.png", caption=CAPTION, category=OMNIGLOT.title),
        pdf=f"{RESULTS}/figures/{{panel}}.pdf",
    log:
        f"{LOGS}/figures/{{panel}}.log",
    benchmark:
        f"{BENCHMARKS}/figures/{{panel}}.tsv"
    wildcard_constraints:
        panel=panel_pattern("omniglot"),
    localrule: True
    params:
        **stage_params("omniglot_figure"),
        caption=caption("omniglot"),
    threads: threads("omniglot_figure")
    resources:
        **resources("omniglot_figure"),
    conda:
        ENV
    shell:
        STAGE
