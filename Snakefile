"""What self-attention learns from masked language modelling on generalised Potts data.

    snakemake --cores 2                                # the quick preset (config.yaml)
    snakemake --cores 8 --configfile config/paper.yaml # the papers' protocol
    snakemake --profile slurm                          # on a SLURM cluster (slurm/config.yaml)
    snakemake --report report.html                     # every figure with its caption

The rules live in rules/, one file per study, and read each study's registry
(workflow_lib/studies/<study>/registry.py); rules/common.smk validates the config and holds the
helpers they share, among them the rules that end every study (its tables, claims and figures).
"""


configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/potts_paper.smk"
include: "rules/attention_hmm.smk"
include: "rules/omniglot.smk"
include: "rules/proteins.smk"


REPORT_PAGE = f"{RESULTS}/report.rst"


report: os.path.abspath(REPORT_PAGE)


rule report_page:
    """The report's front page: every study's claims table."""
    input:
        **{name: f"{RESULTS}/{STUDY[name].claims}" for name, targets in TARGETS.items() if targets},
    output:
        page=REPORT_PAGE,
    log:
        f"{LOGS}/report.log",
    benchmark:
        f"{BENCHMARKS}/report.tsv"
    localrule: True
    params:
        **stage_params("report_page"),
    threads: threads("report_page")
    resources:
        **resources("report_page"),
    conda:
        ENV
    shell:
        STAGE


rule all:
    default_target: True
    input:
        TARGETS.values(),
        REPORT_PAGE,
