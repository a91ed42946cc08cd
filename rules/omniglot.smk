# Attention paths on one-shot Omniglot (the paper's Fig. 3): images and episodes, the
# gradient-descent model, its frozen heads' path-attended inputs, the theory over (N, T) with
# T chosen on validation episodes, the GP, posterior samples, head scores, pruning, figures.

import os

from workflow_lib.analysis.omniglot_tables import PANEL_TABLES as OMNI_PANEL_TABLES
from workflow_lib.analysis.omniglot_tables import TABLES as OMNI_TABLES
from workflow_lib.omniglot_artefacts import stage_params


localrules:
    omniglot,
    omniglot_tables,
    omniglot_figure,


OMNI = CFG["omniglot"]
OMNI_DIR = f"{RESULTS}/omniglot"
OMNI_DATA = os.path.join(workflow.basedir, OMNI["data_dir"])  # relative to the Snakefile
OMNI_PANELS = list(OMNI_PANEL_TABLES)
OMNI_FIGURES = expand(f"{RESULTS}/figures/{{panel}}.{{ext}}", panel=OMNI_PANELS, ext=("png", "pdf"))
OMNIGLOT_FIGURES = OMNI_FIGURES if OMNI["enabled"] else []  # in the default target
# a shipped trained model (omniglot.model_file) replaces omniglot_train
OMNI_MODEL = (os.path.join(workflow.basedir, OMNI["model_file"]) if OMNI["model_file"]
              else f"{OMNI_DIR}/model.h5")


def omni_params(stage):
    """The job params of an Omniglot rule (``omniglot_artefacts.stage_params``)."""
    return stage_params(CFG, stage)


rule omniglot:
    """Every Omniglot figure, whether or not ``omniglot.enabled`` puts them in the default
    target."""
    input:
        OMNI_FIGURES,


rule omniglot_data:
    input:
        train_archive=os.path.join(OMNI_DATA, OMNI["train_archive"]),
        test_archive=os.path.join(OMNI_DATA, OMNI["test_archive"]),
    output:
        data=f"{OMNI_DIR}/data.h5",
    params:
        job=job(omni_params("omniglot_data")),
    threads: 1
    shell:
        stage("omniglot_data")


rule omniglot_train:
    input:
        data=rules.omniglot_data.output.data,
    output:
        model=f"{OMNI_DIR}/model.h5",
    params:
        job=job(omni_params("omniglot_train")),
    threads: THREADS
    resources:
        **GPU,
    shell:
        stage("omniglot_train")


rule omniglot_features:
    input:
        data=rules.omniglot_data.output.data,
        model=OMNI_MODEL,
    output:
        features=f"{OMNI_DIR}/features.h5",
    params:
        job=job(omni_params("omniglot_features")),
    threads: THREADS
    shell:
        stage("omniglot_features")


rule omniglot_theory:
    input:
        features=rules.omniglot_features.output.features,
    output:
        theory=f"{OMNI_DIR}/theory.h5",
    params:
        job=job(omni_params("omniglot_theory")),
    threads: THREADS
    shell:
        stage("omniglot_theory")


rule omniglot_sample:
    input:
        features=rules.omniglot_features.output.features,
        theory=rules.omniglot_theory.output.theory,
    output:
        samples=f"{OMNI_DIR}/samples.h5",
    params:
        job=job(omni_params("omniglot_sample")),
    threads: THREADS
    resources:
        **GPU,
    shell:
        stage("omniglot_sample")


rule omniglot_prune:
    input:
        data=rules.omniglot_data.output.data,
        model=OMNI_MODEL,
        theory=rules.omniglot_theory.output.theory,
    output:
        pruning=f"{OMNI_DIR}/pruning.h5",
    params:
        job=job(omni_params("omniglot_prune")),
    threads: THREADS
    shell:
        stage("omniglot_prune")


rule omniglot_tables:
    input:
        model=OMNI_MODEL,
        theory=rules.omniglot_theory.output.theory,
        pruning=rules.omniglot_prune.output.pruning,
        samples=[rules.omniglot_sample.output.samples] if OMNI["sample_width"] else [],
    output:
        **{name: f"{OMNI_DIR}/tables/{name}.csv" for name in OMNI_TABLES},
    params:
        job=job({}),
    shell:
        stage("omniglot_tables")


rule omniglot_figure:
    input:
        unpack(
            lambda wc: {t: f"{OMNI_DIR}/tables/{t}.csv" for t in OMNI_PANEL_TABLES[wc.panel]}
        ),
    output:
        png=report(
            f"{RESULTS}/figures/{{panel}}.png",
            caption="../report/figure.rst",
            category="Attention paths: Omniglot",
        ),
        pdf=f"{RESULTS}/figures/{{panel}}.pdf",
    wildcard_constraints:
        panel="|".join(OMNI_PANELS),
    params:
        job=job(lambda wc: {"panel": wc.panel}),
    shell:
        stage("omniglot_figure")
