"""What self-attention learns from masked language modelling on generalised Potts data.

    snakemake --cores 2                                # the quick preset (config.yaml)
    snakemake --cores 8 --configfile config/paper.yaml # the papers' protocol
    snakemake --profile slurm                          # on a SLURM cluster (slurm/config.yaml)
    snakemake --report report.html                     # every figure with its caption

Each study's rules live in its folder, workflow_lib/studies/<study>/rules.smk, and read its
registry (workflow_lib/studies/<study>/registry.py).
"""

import workflow_lib.studies


configfile: "config.yaml"


include: os.path.join(os.path.dirname(workflow_lib.studies.__file__), "common.smk")


for _study in STUDY_NAMES:

    include: study_rules(_study)


REPORT_PAGE = f"{RESULTS}/report.rst"


report: os.path.abspath(REPORT_PAGE)


rule report_page:
    """The report's front page: every study's claims table."""
    input:
        **{name: f"{RESULTS}/{STUDY[name].claims}" for name, targets in TARGETS.items() if targets},
    output:
        page=REPORT_PAGE,
    params:
        job=job("report_page"),
    threads: threads("report_page")
    resources:
        **resources("report_page"),
    shell:
        STAGE


rule all:
    default_target: True
    input:
        TARGETS.values(),
        REPORT_PAGE,


derive_stage_directives()
