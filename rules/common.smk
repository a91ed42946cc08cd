# Config validation (before any job starts) and the helpers every rules file uses. Each rule
# states its input, output, log, benchmark, the stage function it runs, threads and resources;
# its config slice and the values of the last two come from its study's registry
# (workflow_lib/studies/<study>/registry.py):
#
#     params:
#         **stage_params("potts_sample", "workflow_lib.studies.potts_paper.stages_data:sample"),
#                                     the stage it runs, job JSON, code digest, config-slice digest
#     threads: threads("potts_sample")
#     resources:
#         **resources("potts_sample"),  runtime, mem_mb (growing with the attempt), gpu
#     shell:
#         STAGE                       python -m workflow_lib stage {params.stage} ...
#
# A study's stages that run once per realisation are defined by one call each in its rules file,
# per_realisation (one job per realisation, or per chunk of them where the registry gives the
# rule a chunk key, Rule.chunk). The rules that end every study are written once, here, and
# defined by one call in its rules file: study_tables (its tables from its artefacts),
# study_claims (its claims table from its tables) and study_figure (its panels).
import functools
import itertools
import json
import os
import sys

from snakemake.exceptions import WorkflowError

from workflow_lib.runtime.checkpoints import job_spec
from workflow_lib.core.code_digest import stage_digest
from workflow_lib.core.errors import ConfigError
from workflow_lib.core.config import digest, load_config
from workflow_lib.runtime.job_environment import job_environment
from workflow_lib.core.registry import chunk_label, chunk_rule, chunk_size, chunks
from workflow_lib.core.studies import owner, science_code, stage_code, studies
from workflow_lib.core.studies import rules as registered_rules
from workflow_lib.core.realisations import MANIFEST as MANIFEST_FILE, realisations

try:
    CFG = load_config(config)
except ConfigError as exc:
    sys.stderr.write(exc.report("config error: ") + "\n")
    sys.exit(1)

RESULTS = CFG["results"]
LOGS = f"{RESULTS}/logs"
BENCHMARKS = f"{RESULTS}/benchmarks"
THREADS = CFG["compute"]["threads"]
REGISTRY = registered_rules()
STUDY = {each.name: each for each in studies()}  # every study found, in order
# Each registered rule's stage function as its rules file names it ('module:function'), and for
# each of Snakemake's rules the registered one it runs (a chunk's: the chunked one)
STAGES = {}
REGISTERED = {}
# The stages every study's ending rules run: its claims table from its tables (with the study's
# claims_of) and one figure panel (with the panel's draw function)
CLAIMS_STAGE = "workflow_lib.claims.stage:claims"
FIGURE_STAGE = "workflow_lib.pages.figure:figure"
CAPTION = os.path.join(workflow.basedir, "report", "caption.rst")  # renders params.caption
TARGETS = {}  # study -> what it adds to the default target (its rules file sets it)
# The software every job runs in with `--sdm conda`: the package's dependencies (the package
# itself is this checkout, on PYTHONPATH below)
ENV = os.path.join(workflow.basedir, "envs", "workflow_lib.yaml")

# The shell command of every rule: the stage named by the rule's params, with its job JSON and
# log; a failed stage's last log line (its one-line error) goes to the terminal too, with its exit
# status. Snakemake records the command as the rule's code, so it names no path of this
# environment or checkout (a copied results folder stays valid elsewhere): ``python`` is found on
# PATH and imports this checkout's package from PYTHONPATH, both set here for every job
# (workflow_lib.runtime.job_environment; jobs inherit them, SLURM jobs too).
STAGE = ("python -m workflow_lib stage {params.stage} --job {params.job:q} --rule {params.rule}"
         " > {log} 2>&1 || {{ status=$?; tail -n 1 {log} >&2; exit $status; }}")
os.environ.update(job_environment(workflow.basedir, sys.executable, os.environ))


def stage_params(name, stage, parts=None, **fixed):
    """The params of the registered ``name`` running ``stage`` (``'module:function'``, as the
    rule's text names it; recorded in ``STAGES``), its wildcards completed by ``fixed`` (the
    ``realisations`` of a side-by-side chunk's rule): ``stage``, ``rule`` (``name``, which the
    stage's error lines name), ``job`` (the ``--job`` JSON: input/output paths, config slice,
    threads, device, checkpoint file (``workflow_lib.runtime.checkpoints.job_spec``); for a
    ``per_realisation`` rule, a list of them, one per part of its job, ``parts``: the wildcards
    each completes, its files those named ``<key>_<i>`` for part ``i``), ``code`` (the digest of
    the package files its stage function imports, transitively, and for a figure job those of its
    panel's draw function: a code edit re-runs exactly the jobs whose code reaches it) and
    ``config`` (the digest of its config slice for the wildcards: a config edit re-runs exactly
    the jobs whose slice it changes)."""
    entry = REGISTRY[name]
    if STAGES.setdefault(name, stage) != stage:
        raise WorkflowError(f"rule {name} runs {STAGES[name]} and {stage}; one stage a rule")

    def values(wildcards, part=None):
        return {**dict(wildcards.items()), **fixed, **(part or {})}

    def one(wildcards, input, output, threads, part=None):
        return {
            "input": dict(input.items()),
            "output": dict(output.items()),
            "params": entry.params(CFG, values(wildcards, part)),
            "threads": threads,
            "device": entry.device(CFG),
            "checkpoint": job_spec(CFG, RESULTS, dict(output.items())),
        }

    def job(wildcards, input, output, threads):
        if parts is None:
            return json.dumps(one(wildcards, input, output, threads), sort_keys=True)
        return json.dumps([one(wildcards, of_part(input, i), of_part(output, i), threads, part)
                           for i, part in enumerate(parts)], sort_keys=True)

    # ``config`` reads the wildcards alone, so that Snakemake records it and re-runs the job when
    # it changes (``job`` also reads the input and output paths, and Snakemake leaves such params
    # out of its params trigger)
    def config_slice(wildcards):
        if parts is None:
            return digest(entry.params(CFG, values(wildcards)))
        return digest([entry.params(CFG, values(wildcards, part)) for part in parts])

    def code(wildcards):
        return "+".join(map(code_digest, stage_code(name, stage, values(wildcards))))

    return {"stage": stage, "rule": name, "job": job, "code": code, "config": config_slice}


def of_part(files, i):
    """The files of part ``i`` of a ``per_realisation`` job (named ``<key>_<i>``), by key."""
    return {key.removesuffix(f"_{i}"): path for key, path in files.items()
            if key.endswith(f"_{i}")}


def per_realisation(name, stage, realisations, output, log, input=None, each=None, priority=0,
                    constraints=None):
    """Rule ``name`` of a study's registry, running ``stage`` (``'module:function'``), over
    ``realisations``: one job per realisation, or per chunk of them when the registry gives the
    rule a chunk key (``Rule.chunk``; rules ``name_r0``, ``name_r0_2`` for a chunk,
    ``registry.chunk_rule``). A job runs the stage for each realisation, and each value of the
    wildcards ``each`` names (wildcard -> values), in turn in one process (one start and import,
    each program traced once); a ``side_by_side`` rule's job runs it once for its chunk's
    realisations together (``realisations`` among its params; its files named ``<key>_r<r>``).
    ``input`` and ``output``: name -> path, ``{r}`` standing for the realisation and ``{w}`` for
    wildcard ``w`` of ``each`` (any other ``{w}`` is a wildcard of Snakemake's); ``log``: the
    path of the log and benchmark (under the logs and benchmarks folders, no extension),
    ``r{r}`` standing for the chunk (``r3``, ``r0-2``); ``priority``: Snakemake's, among the jobs
    ready to run (a number, or a function of the wildcards); ``constraints``: wildcard -> the
    pattern its values match."""
    entry, each = REGISTRY[name], each or {}
    STAGES.setdefault(name, stage)  # a rule without realisations in this run is still named
    for chunk in chunks(realisations, chunk_size(entry, CFG)):
        if entry.side_by_side:
            parts, fixed = None, {"realisations": chunk}

            def files(named, chunk=chunk):
                return {f"{key}_r{r}": fill(path, {"r": str(r)}) for key, path in named.items()
                        for r in chunk}
        else:
            parts = [{"r": str(r), **{w: str(v) for w, v in zip(each, values, strict=True)}}
                     for r in chunk for values in itertools.product(*each.values())]
            fixed = {}
            if not parts:  # a wildcard of ``each`` without values: nothing to run
                continue

            def files(named, parts=parts):
                return {f"{key}_{i}": fill(path, part)
                        for key, path in named.items() for i, part in enumerate(parts)}

        label = log.replace("r{r}", chunk_label(chunk))
        REGISTERED[chunk_rule(name, chunk)] = name

        rule:
            name:
                chunk_rule(name, chunk)
            input:
                **files(input or {}),
            output:
                **files(output),
            log:
                f"{LOGS}/{label}.log",
            benchmark:
                f"{BENCHMARKS}/{label}.tsv"
            wildcard_constraints:
                **(constraints or {}),
            priority: priority
            params:
                **stage_params(name, stage, parts=parts, **fixed),
            threads: threads(name)
            resources:
                **resources(name, parts=parts, **fixed),
            conda:
                ENV
            shell:
                STAGE


def fill(path, values):
    """``path`` with each ``{key}`` of ``values`` (key -> text) replaced by its value, any other
    ``{wildcard}`` left for Snakemake."""
    for key, value in values.items():
        path = path.replace(f"{{{key}}}", value)
    return path


@functools.cache
def code_digest(target):
    """``stage_digest`` of ``'module:function'`` ``target``, once per workflow run."""
    return stage_digest(target)


def threads(name):
    """``compute.threads`` for the rules that use them, else one."""
    return THREADS if REGISTRY[name].threaded else 1


def resources(name, parts=None, **fixed):
    """Runtime (minutes) and memory (MB) of rule ``name`` from its registry entry (its wildcards
    completed by ``fixed``, as in ``stage_params``), growing with the attempt; for a
    ``per_realisation`` rule, the sum of its ``parts``' runtimes and the largest memory; with
    ``compute.gpu``, for the rules that use one, a GPU (``gpu``, and ``compute.gpu_model`` and
    ``compute.gpu_partition`` when set: the SLURM executor plugin's ``gpu_model`` and
    ``slurm_partition``)."""
    entry = REGISTRY[name]

    def amount(key, combine):
        def value(wildcards, attempt):
            return combine(entry.resources(CFG, {**dict(wildcards.items()), **fixed, **part},
                                           attempt)[key] for part in parts or [{}])

        return value

    gpu = {}
    if entry.gpu and CFG["compute"]["gpu"]:
        gpu = {"gpu": 1, "gpu_model": CFG["compute"]["gpu_model"],
               "slurm_partition": CFG["compute"]["gpu_partition"]}
    return {"runtime": amount("runtime", sum), "mem_mb": amount("mem_mb", max),
            **{key: value for key, value in gpu.items() if value is not None}}


def caption(study):
    """The caption of a figure rule's panel, from the study's registry."""
    return lambda wildcards: STUDY[study].panel(wildcards.panel).caption


def panels(study):
    """The names of study ``study``'s panels that the config has (``Panel.exists``)."""
    return [panel.name for panel in STUDY[study].drawn_panels(CFG)]


def figures(study):
    """The PNG and PDF files of study ``study``'s panels that the config has."""
    return expand(f"{RESULTS}/figures/{{panel}}.{{ext}}", panel=panels(study), ext=("png", "pdf"))


def panel_pattern(study):
    """The ``panel`` wildcard constraint of study ``study``'s figure rule: the panels the config
    has (none: a pattern no panel name matches)."""
    return "|".join(panels(study)) or "(?!)"


def panel_inputs(study, **extra):
    """The input function of study ``study``'s figure rule: the tables the panel is drawn from
    (``Study.table_path``, by name) and, for a panel named in ``extra``, its files too."""

    def files(wildcards):
        panel = STUDY[study].panel(wildcards.panel)
        return table_files(study, panel.tables) | extra.get(wildcards.panel, {})

    return files


def own_target(study, targets):
    """The files of a study's own target (``snakemake proteins``: its figures and claims); in a
    shard, a ``WorkflowError`` that says how to run it: a shard builds its studies' tables and
    the run's manifest in the default target (the claims and figures need every realisation)."""
    if CFG["shard"] is not None:
        raise WorkflowError(
            f"shard = {json.dumps(CFG['shard'])}: a shard runs the default target, not "
            f"`{study}` (its claims and figures need every realisation): drop `{study}` and name "
            f"the study in shard_studies, e.g. --config shard={CFG['shard']} "
            f"'shard_studies=[\"{study}\"]'")
    return targets


def table_files(study, names):
    """Table name -> its path (``Study.table_path``) for the tables ``names`` of study ``study``."""
    return {name: f"{RESULTS}/{STUDY[study].table_path(name)}" for name in names}


def study_tables(name, stage, **inputs):
    """Rule ``name`` of a study's registry, running ``stage`` (``'module:function'``): the
    study's tables (``Study.tables``) from the files ``inputs`` (by name), on the submitting host;
    its log and benchmark are named after its first table."""
    study = owner(name)
    REGISTERED[name] = name
    first = stem(study.table_path(study.tables[0]))

    rule:
        name:
            name
        input:
            **inputs,
        output:
            **table_files(study.name, study.tables),
        log:
            f"{LOGS}/{first}.log",
        benchmark:
            f"{BENCHMARKS}/{first}.tsv"
        localrule: True
        params:
            **stage_params(name, stage),
        threads: threads(name)
        resources:
            **resources(name),
        conda:
            ENV
        shell:
            STAGE


def study_claims(study):
    """The claims table (``Study.claims``) of study ``study`` from its tables, by the rule its
    registry makes with ``claims_rule``, running ``CLAIMS_STAGE`` with the study's
    ``claims_of``, on the submitting host; its log and benchmark are named after the claims
    table."""
    name = STUDY[study].rule_of("claims").name
    claims = STUDY[study].claims
    REGISTERED[name] = name

    rule:
        name:
            name
        input:
            **table_files(study, STUDY[study].tables),
        output:
            claims=f"{RESULTS}/{claims}",
        log:
            f"{LOGS}/{stem(claims)}.log",
        benchmark:
            f"{BENCHMARKS}/{stem(claims)}.tsv"
        localrule: True
        params:
            **stage_params(name, CLAIMS_STAGE),
        threads: threads(name)
        resources:
            **resources(name),
        conda:
            ENV
        shell:
            STAGE


def study_figure(study, **extra):
    """The panels of study ``study`` that the config has, PNG and PDF, each from its tables and,
    for a panel named in ``extra`` (panel -> name -> files), those files too, by the rule its
    registry makes with ``figure_rule``, running ``FIGURE_STAGE`` with the panel's draw function,
    on the submitting host, in the report under the study's title."""
    name = STUDY[study].rule_of("figure").name
    REGISTERED[name] = name

    rule:
        name:
            name
        input:
            unpack(panel_inputs(study, **extra)),
        output:
            png=report(f"{RESULTS}/figures/{{panel}}.png", caption=CAPTION,
                       category=STUDY[study].title),
            pdf=f"{RESULTS}/figures/{{panel}}.pdf",
        log:
            f"{LOGS}/figures/{{panel}}.log",
        benchmark:
            f"{BENCHMARKS}/figures/{{panel}}.tsv"
        wildcard_constraints:
            panel=panel_pattern(study),
        localrule: True
        params:
            **stage_params(name, FIGURE_STAGE),
            caption=caption(study),
        threads: threads(name)
        resources:
            **resources(name),
        conda:
            ENV
        shell:
            STAGE


def stem(path):
    """``path`` without its extension: a rule's log and benchmark are named after its output."""
    return os.path.splitext(path)[0]


def from_workflow(path):
    """A path the config gives relative to the Snakefile's folder (or absolute), relative to the
    working directory: a results folder moved with its checkout keeps its input paths."""
    return os.path.relpath(os.path.join(workflow.basedir, path))


def merged_config_files():
    """The run's config files in the order Snakemake merges them (config.yaml, then each
    --configfile), relative to the workflow's folder where they lie in it: the report's front
    page names them."""
    given = [os.path.abspath(f) for f in workflow.overwrite_configfiles]
    own = [os.path.abspath(f) for f in workflow.configfiles]
    return [os.path.relpath(f, workflow.basedir) if f.startswith(workflow.basedir + os.sep)
            else f for f in dict.fromkeys([*(f for f in own if f not in given), *given])]
