# Tables across runs and every figure of the Potts paper (local jobs).

from workflow_lib.stages.figures import PANELS as FIGURE_PANELS


localrules:
    aggregate,
    figure,


TABLES = [
    "training_history",
    "training_final",
    "training_restarts",
    "training_summary",
    "plm",
    "replica",
    "sample_complexity",
    "sample_complexity_summary",
    "sample_complexity_peak",
]
# panel -> the tables it reads: the figure stage's own table (Fig. 2b reads trained models)
PANEL_TABLES = {"fig2b": []} | {panel: list(names) for panel, (_, names) in FIGURE_PANELS.items()}
PANELS = sorted(PANEL_TABLES)


rule aggregate:
    input:
        train=expand(f"{RESULTS}/train/{{arch}}/r{{r}}.h5", arch=ARCHS, r=REALISATIONS),
        plm=expand(f"{RESULTS}/plm/{{kind}}/r{{r}}.h5", kind=CFG["plm"]["kinds"], r=REALISATIONS),
        sample_complexity=expand(f"{RESULTS}/sample_complexity/r{{r}}.h5", r=REALISATIONS),
        theory=rules.replica_theory.output.theory,
        simulations=rules.replica_sims.output.simulations,
    output:
        **{name: f"{RESULTS}/tables/{name}.csv" for name in TABLES},
    params:
        job=job({}),
    shell:
        stage("aggregate")


def panel_inputs(wildcards):
    tables = {t: f"{RESULTS}/tables/{t}.csv" for t in PANEL_TABLES[wildcards.panel]}
    if wildcards.panel == "fig2b":
        main = [a for a in FIG2B if a in ARCHS]
        tables["models"] = [f"{RESULTS}/train/{a}/r0.h5" for a in main]
    return tables


rule figure:
    input:
        unpack(panel_inputs),
    output:
        png=report(
            f"{RESULTS}/figures/{{panel}}.png",
            caption="../report/figure.rst",
            category="Potts paper",
        ),
        pdf=f"{RESULTS}/figures/{{panel}}.pdf",
    wildcard_constraints:
        panel="|".join(PANELS),
    params:
        job=job(lambda wc: {"panel": wc.panel}),
    shell:
        stage("figure")
