# MLM training per (architecture, realisation), pseudo-likelihood baselines and the
# sample-complexity sweep (Fig. 3 right).

ARCHS = CFG["training"]["architectures"] + [
    interpolated(a) for a in CFG["training"]["interpolation_a"]
]


def realisation_params(wildcards, **extra):
    return {"seed": CFG["seed"], "realisation": int(wildcards.r), **extra}


rule train:
    input:
        samples=rules.sample.output.samples,
    output:
        model=f"{RESULTS}/train/{{arch}}/r{{r}}.h5",
    wildcard_constraints:
        arch=wildcard_pattern(),
    params:
        job=job(lambda wc: realisation_params(wc, arch=wc.arch, training=CFG["training"])),
    threads: THREADS
    resources:
        **GPU,
    shell:
        stage("train")


rule plm:
    input:
        samples=rules.sample.output.samples,
    output:
        fit=f"{RESULTS}/plm/{{kind}}/r{{r}}.h5",
    wildcard_constraints:
        kind="|".join(PLM_KINDS),
    params:
        job=job(lambda wc: realisation_params(wc, kind=wc.kind, plm=CFG["plm"])),
    threads: THREADS
    shell:
        stage("plm")


rule sample_complexity:
    input:
        samples=rules.sample.output.samples,
    output:
        curve=f"{RESULTS}/sample_complexity/r{{r}}.h5",
    params:
        job=job(
            lambda wc: realisation_params(
                wc, sample_complexity=CFG["sample_complexity"], l2_full=CFG["plm"]["l2_full"]
            )
        ),
    threads: THREADS
    shell:
        stage("sample_complexity")
