# Couplings and Gibbs samples, one job per realisation.


def potts_params(wildcards):
    return {
        "seed": CFG["seed"],
        "realisation": int(wildcards.r),
        "potts": CFG["potts"],
        "sampling": CFG["sampling"],
        "beta_tuning": CFG["beta_tuning"],
    }


rule couplings:
    output:
        couplings=f"{RESULTS}/potts/r{{r}}/couplings.h5",
    params:
        job=job(
            lambda wc: {"seed": CFG["seed"], "realisation": int(wc.r), "potts": CFG["potts"]}
        ),
    threads: 1
    shell:
        stage("couplings")


rule sample:
    input:
        couplings=rules.couplings.output.couplings,
    output:
        samples=f"{RESULTS}/potts/r{{r}}/samples.h5",
    params:
        job=job(potts_params),
    threads: THREADS
    resources:
        **GPU,
    shell:
        stage("sample")
