# The Potts paper: couplings and Gibbs samples per realisation, MLM training per (architecture,
# realisation), pseudo-likelihood baselines, the sample-complexity sweep, the replica theory,
# tables across realisations, figures. Params, threads, resources, captions: registry.py.

from workflow_lib.mlm.architectures import FIG2B, PLM_KINDS, interpolated, wildcard_pattern

POTTS = STUDY["potts_paper"]
ARCHS = CFG["training"]["architectures"] + [
    interpolated(a) for a in CFG["training"]["interpolation_a"]
]
PANELS = [panel.name for panel in POTTS.panels]
POTTS_FIGURES = expand(f"{RESULTS}/figures/{{panel}}.{{ext}}", panel=PANELS, ext=("png", "pdf"))
TARGETS["potts_paper"] = [*POTTS_FIGURES, f"{RESULTS}/{POTTS.claims}"]


rule couplings:
    output:
        couplings=f"{RESULTS}/potts/r{{r}}/couplings.h5",
    params:
        job=job("couplings"),
    threads: threads("couplings")
    resources:
        **resources("couplings"),
    shell:
        STAGE


rule sample:
    input:
        couplings=rules.couplings.output.couplings,
    output:
        samples=f"{RESULTS}/potts/r{{r}}/samples.h5",
    params:
        job=job("sample"),
    threads: threads("sample")
    resources:
        **resources("sample"),
    shell:
        STAGE


rule train:
    input:
        samples=rules.sample.output.samples,
    output:
        model=f"{RESULTS}/train/{{arch}}/r{{r}}.h5",
    wildcard_constraints:
        arch=wildcard_pattern(),
    params:
        job=job("train"),
    threads: threads("train")
    resources:
        **resources("train"),
    shell:
        STAGE


rule plm:
    input:
        samples=rules.sample.output.samples,
    output:
        fit=f"{RESULTS}/plm/{{kind}}/r{{r}}.h5",
    wildcard_constraints:
        kind="|".join(PLM_KINDS),
    params:
        job=job("plm"),
    threads: threads("plm")
    resources:
        **resources("plm"),
    shell:
        STAGE


rule sample_complexity:
    input:
        samples=rules.sample.output.samples,
    output:
        curve=f"{RESULTS}/sample_complexity/r{{r}}.h5",
    params:
        job=job("sample_complexity"),
    threads: threads("sample_complexity")
    resources:
        **resources("sample_complexity"),
    shell:
        STAGE


rule replica_theory:
    output:
        theory=f"{RESULTS}/theory/replica_theory.h5",
    params:
        job=job("replica_theory"),
    threads: threads("replica_theory")
    resources:
        **resources("replica_theory"),
    shell:
        STAGE


rule replica_sims:
    output:
        simulations=f"{RESULTS}/theory/replica_simulations.h5",
    params:
        job=job("replica_sims"),
    threads: threads("replica_sims")
    resources:
        **resources("replica_sims"),
    shell:
        STAGE


rule aggregate:
    input:
        samples=expand(f"{RESULTS}/potts/r{{r}}/samples.h5", r=REALISATIONS),
        train=expand(f"{RESULTS}/train/{{arch}}/r{{r}}.h5", arch=ARCHS, r=REALISATIONS),
        plm=expand(f"{RESULTS}/plm/{{kind}}/r{{r}}.h5", kind=CFG["plm"]["kinds"], r=REALISATIONS),
        sample_complexity=expand(f"{RESULTS}/sample_complexity/r{{r}}.h5", r=REALISATIONS),
        theory=rules.replica_theory.output.theory,
        simulations=rules.replica_sims.output.simulations,
    output:
        **{name: f"{RESULTS}/tables/{name}.csv" for name in POTTS.tables},
    params:
        job=job("aggregate"),
    threads: threads("aggregate")
    resources:
        **resources("aggregate"),
    shell:
        STAGE


rule claims:
    input:
        **{name: f"{RESULTS}/tables/{name}.csv" for name in POTTS.tables},
    output:
        claims=f"{RESULTS}/{POTTS.claims}",
    params:
        job=job("claims"),
    threads: threads("claims")
    resources:
        **resources("claims"),
    shell:
        STAGE


def panel_inputs(wildcards):
    """The panel's tables (Fig. 2b: the trained models of realisation 0)."""
    tables = {t: f"{RESULTS}/tables/{t}.csv" for t in POTTS.panel(wildcards.panel).tables}
    if wildcards.panel == "fig2b":
        tables["models"] = [f"{RESULTS}/train/{a}/r0.h5" for a in FIG2B if a in ARCHS]
    return tables


rule figure:
    input:
        unpack(panel_inputs),
    output:
        png=report(f"{RESULTS}/figures/{{panel}}.png", caption=CAPTION, category=POTTS.title),
        pdf=f"{RESULTS}/figures/{{panel}}.pdf",
    wildcard_constraints:
        panel="|".join(PANELS),
    params:
        job=job("figure"),
        caption=caption("potts_paper"),
    threads: threads("figure")
    resources:
        **resources("figure"),
    shell:
        STAGE
