"""What self-attention learns from masked language modelling on generalised Potts data.

    snakemake --cores 2                                # the quick preset (config.yaml)
    snakemake --cores 8 --configfile config/paper.yaml # the papers' protocol
    snakemake --profile slurm                          # on a SLURM cluster (slurm/config.yaml)
    snakemake --report report.html                     # every figure with its caption
    snakemake --cores 2 --config shard=0-4             # realisations 0 to 4 alone: a shard

The rules live in rules/, one file per study, and read each study's registry
(workflow_lib/studies/<study>/registry.py); rules/common.smk validates the config and holds the
helpers they share, among them the rules that end every study (its tables, claims and figures).
Every study found under workflow_lib/studies/ (workflow_lib.core.studies) has its rules file
included, in the studies' order: a new study is its folder and its rules file.
"""


configfile: "config.yaml"


include: "rules/common.smk"


for name in STUDY:
    include: f"rules/{name}.smk"


# A shard (config key shard) builds the tables of the studies it runs and the manifest, not the
# claims, figures or report: those need every realisation (workflow_lib.core.realisations)
SHARD = CFG["shard"] is not None
if SHARD:
    TARGETS = {name: list(table_files(name, STUDY[name].tables).values())
               if targets and realisations(CFG, STUDY[name]) else []
               for name, targets in TARGETS.items()}
RUN_STUDIES = [name for name, targets in TARGETS.items() if targets]
MANIFEST = f"{RESULTS}/{MANIFEST_FILE}"
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
        **stage_params("report_page", "workflow_lib.pages.report:report_page",
                       configfiles=merged_config_files()),
    threads: threads("report_page")
    resources:
        **resources("report_page"),
    conda:
        ENV
    shell:
        STAGE


rule manifest:
    """What the run is: its shard, config, realisations and code (workflow_lib.shards.manifest)."""
    input:
        [table_files(name, STUDY[name].tables).values() for name in RUN_STUDIES],
    output:
        manifest=MANIFEST,
    log:
        f"{LOGS}/manifest.log",
    benchmark:
        f"{BENCHMARKS}/manifest.tsv"
    localrule: True
    params:
        **stage_params("manifest", "workflow_lib.shards.manifest:manifest", studies=RUN_STUDIES,
                       code=science_code(RUN_STUDIES, STAGES)),
    threads: threads("manifest")
    resources:
        **resources("manifest"),
    conda:
        ENV
    shell:
        STAGE


rule all:
    default_target: True
    input:
        TARGETS.values(),
        MANIFEST,
        [] if SHARD else REPORT_PAGE,
