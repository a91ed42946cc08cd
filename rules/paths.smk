# Attention paths (second paper): path-attended inputs, the order parameter U(N) with GP lines,
# posterior samples at small N, tables and the Fig. 2c-e panels.

localrules:
    paths_tables,
    paths_figure,


PATHS = CFG["paths"]
PATHS_EXPERIMENTS = PATHS["experiments"]
PATHS_REALISATIONS = list(range(PATHS["realisations"]))
PATHS_DATA_KEYS = [
    "n_train", "n_test", "tokens", "features", "p_stay_plus", "p_stay_minus",
    "noise_in_plane", "sigma_perp", "attention_beta", "random_head_perturbation",
    "prior_variance",
]
PATHS_PANELS = (["paths_fig2c", "paths_fig2d"] if "four_paths" in PATHS_EXPERIMENTS else []) + (
    ["paths_fig2e"] if "two_paths" in PATHS_EXPERIMENTS else []
)
PATHS_FIGURES = expand(f"{RESULTS}/figures/{{panel}}.{{ext}}", panel=PATHS_PANELS, ext=("png", "pdf"))
PATHS_TABLES = ["accuracy", "order_parameters", "pc_overlaps", "diagnostics"]


def paths_params(*keys):
    """The job params of a paths rule: seed, realisation, experiment (and width) from the
    wildcards, plus the data keys and ``keys`` of the ``paths`` config."""

    def build(wc):
        params = {"seed": CFG["seed"], "realisation": int(wc.r), "experiment": wc.experiment}
        if "N" in wc.keys():
            params["width"] = int(wc.N)
        params["paths"] = {k: PATHS[k] for k in [*PATHS_DATA_KEYS, *keys]}
        return params

    return build


wildcard_constraints:
    experiment="|".join(PATHS_EXPERIMENTS) or "none",


rule paths_features:
    output:
        features=f"{RESULTS}/paths/r{{r}}/{{experiment}}/features.h5",
    params:
        job=job(paths_params()),
    threads: 1
    shell:
        stage("paths_features")


rule paths_theory:
    input:
        features=rules.paths_features.output.features,
    output:
        theory=f"{RESULTS}/paths/r{{r}}/{{experiment}}/theory.h5",
    params:
        job=job(paths_params("widths", "temperature", "solver", "n_pcs")),
    threads: 1
    shell:
        stage("paths_theory")


rule paths_sample:
    input:
        features=rules.paths_features.output.features,
    output:
        samples=f"{RESULTS}/paths/r{{r}}/{{experiment}}/samples_N{{N}}.h5",
    params:
        job=job(paths_params("temperature", "sampler")),
    threads: THREADS
    resources:
        **GPU,
    shell:
        stage("paths_sample")


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
        **{name: f"{RESULTS}/paths/tables/{name}.csv" for name in PATHS_TABLES},
    params:
        job=job({}),
    shell:
        stage("paths_tables")


PATHS_PANEL_TABLES = {
    "paths_fig2c": ["accuracy", "order_parameters"],
    "paths_fig2d": ["pc_overlaps"],
    "paths_fig2e": ["accuracy", "order_parameters"],
}


rule paths_figure:
    input:
        unpack(
            lambda wc: {t: f"{RESULTS}/paths/tables/{t}.csv" for t in PATHS_PANEL_TABLES[wc.panel]}
        ),
    output:
        png=report(
            f"{RESULTS}/figures/{{panel}}.png",
            caption="../report/figure.rst",
            category="Attention paths",
        ),
        pdf=f"{RESULTS}/figures/{{panel}}.pdf",
    wildcard_constraints:
        panel="|".join(PATHS_PANEL_TABLES),
    params:
        job=job(lambda wc: {"panel": wc.panel}),
    shell:
        stage("paths_figure")
