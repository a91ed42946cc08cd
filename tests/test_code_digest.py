"""Code digests of the stages: derived from the import graph, complete, and exact.

The end-to-end check (an edited module re-runs exactly the dependent Snakemake jobs) is
``test_faults.py::test_editing_code_reruns_only_dependent_rules``.
"""

from __future__ import annotations

import dis
import importlib
import inspect
import shutil
import types
from pathlib import Path

import pytest

from workflow_lib.core import code_digest
from workflow_lib.core.studies import panel as registry_panel
from workflow_lib.core.studies import stage_code, studies
from workflow_lib.core.workflow import stage_functions

STAGES = stage_functions()
CLAIMS_STAGE = "workflow_lib.claims.stage:claims"
FIGURE_STAGE = "workflow_lib.pages.figure:figure"


def _runtime_files(target: str) -> set[Path]:
    """Package files whose functions, classes or modules the stage function loads as globals at
    run time (its bytecode), following helpers of the stage module: independent of the AST."""
    module_name, name = target.split(":")
    module = importlib.import_module(module_name)
    files: set[Path] = set()
    seen: set[str] = set()
    todo = [getattr(module, name)]
    while todo:
        func = todo.pop()
        codes = [func.__code__]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            for ref in {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}:
                obj = module.__dict__.get(ref)
                if isinstance(obj, types.ModuleType):
                    where = getattr(obj, "__file__", None)
                elif inspect.isfunction(obj) or inspect.isclass(obj):
                    where = inspect.getsourcefile(obj)
                    local = obj.__module__ == module_name and inspect.isfunction(obj)
                    if local and ref not in seen:
                        seen.add(ref)
                        todo.append(obj)
                else:
                    continue
                if not where or Path(where).stem == code_digest.DESCRIPTIONS:  # not followed
                    continue
                if Path(where).resolve().is_relative_to(code_digest.ROOT):
                    files.add(Path(where).resolve())
    return files


@pytest.mark.parametrize("name", sorted(STAGES))
def test_digest_covers_everything_the_stage_function_uses(name):
    files = set(code_digest.stage_files(STAGES[name]))
    missing = _runtime_files(STAGES[name]) - files
    assert not missing, sorted(str(m) for m in missing)
    assert code_digest.ROOT / "__main__.py" in files  # the command line runs every stage
    assert code_digest.ROOT / "commands.py" not in files  # its other commands do not



@pytest.mark.parametrize(("name", "wildcards", "module"), [
    # the hand-kept lists once missed these (a module reached only through another module)
    ("potts_figure", {"panel": "fig2b"}, "studies/potts_paper/tables.py"),
    ("potts_train", {}, "core/artefacts.py"), ("potts_plm", {}, "core/artefacts.py"),
    ("potts_sample_complexity", {}, "core/artefacts.py"),
    ("paths_figure", {"panel": "paths_fig2c"}, "attention/designs.py"),
])
def test_digest_includes_modules_reached_indirectly(name, wildcards, module):
    """A figure job's code is the dispatcher's and its panel's draw function's."""
    files = {f for target in stage_code(name, STAGES[name], wildcards)
             for f in code_digest.stage_files(target)}
    assert code_digest.ROOT / module in files


@pytest.mark.parametrize("panel", [each.name for study in studies() for each in study.panels])
def test_a_figure_jobs_code_is_its_panels(panel):
    """Each study's figure rule runs the one dispatcher, and a figure job's code is the
    dispatcher's and its own panel's draw function's."""
    rule = next(r.name for study in studies() if panel in {p.name for p in study.panels}
                for r in study.rules if r.kind == "figure")
    assert STAGES[rule] == FIGURE_STAGE
    targets = stage_code(rule, STAGES[rule], {"panel": panel})
    assert targets == (FIGURE_STAGE, registry_panel(panel).draw)


@pytest.mark.parametrize("study", studies(), ids=lambda study: study.name)
def test_a_claims_jobs_code_is_its_studys_claims(study):
    """Each study's claims rule runs the one claims stage, and a claims job's code is the
    stage's and its study's claims function's (its claims module in the digest)."""
    name = study.rule_of("claims").name
    assert STAGES[name] == CLAIMS_STAGE
    targets = stage_code(name, STAGES[name], {})
    assert targets == (CLAIMS_STAGE, study.claims_of)
    files = {f for target in targets for f in code_digest.stage_files(target)}
    assert code_digest.ROOT / "studies" / study.name / "claims.py" in files

def test_digest_of_a_function_leaves_out_its_module_neighbours():
    """``potts_couplings`` and ``potts_sample`` share a module; only ``potts_sample`` runs the
    Gibbs sampler."""
    gibbs = code_digest.ROOT / "potts" / "gibbs.py"
    assert gibbs in code_digest.stage_files(STAGES["potts_sample"])
    assert gibbs not in code_digest.stage_files(STAGES["potts_couplings"])


@pytest.fixture
def package(tmp_path) -> Path:
    """A copy of the package to edit."""
    root = tmp_path / "workflow_lib"
    shutil.copytree(code_digest.ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _digests(root: Path) -> dict[str, str]:
    return {name: code_digest.stage_digest(target, root) for name, target in STAGES.items()}


def _changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before if before[name] != after[name]}


@pytest.mark.slow
def test_deep_edit_changes_exactly_the_dependent_stages(package):
    before = _digests(package)
    with open(package / "potts" / "diagnostics.py", "a") as f:  # stage -> datasets -> diagnostics
        f.write("\n# an edit\n")
    assert _changed(before, _digests(package)) == {"potts_sample"}
    before = _digests(package)
    with open(package / "mlm" / "models.py", "a") as f:  # stage -> mlm.plm / mlm.train -> models
        f.write("\n# an edit\n")  # and the protein fits: proteins.models -> mlm.models
    assert _changed(before, _digests(package)) == {"potts_train", "potts_plm",
                                                   "potts_sample_complexity", "protein_fit",
                                                   "protein_final_fit"}


@pytest.mark.slow
def test_module_joining_the_import_graph_later_is_picked_up(package):
    (package / "replica" / "extra.py").write_text("SCALE = 1.0\n")
    before = _digests(package)
    assert _changed(before, _digests(package)) == set()  # not imported yet: no stage depends on it
    saddle = package / "replica" / "saddle.py"
    saddle.write_text("from workflow_lib.replica import extra  # noqa: F401\n" + saddle.read_text())
    after = _digests(package)
    assert _changed(before, after) == {"potts_replica_theory", "potts_replica_sims"}
    with open(package / "replica" / "extra.py", "a") as f:
        f.write("SCALE = 2.0\n")
    assert _changed(after, _digests(package)) == {"potts_replica_theory", "potts_replica_sims"}


def test_relative_and_function_local_imports_are_followed(package):
    (package / "replica" / "extra.py").write_text("SCALE = 1.0\n")
    simulate = package / "replica" / "simulate.py"
    simulate.write_text(simulate.read_text() + "\n\ndef _late():\n    from . import extra\n"
                        "    return extra.SCALE\n")
    assert package / "replica" / "extra.py" in code_digest.stage_files(STAGES["potts_replica_sims"],
                                                                       package)


def test_no_stage_imports_another_stage():
    """Stages share code through the science, table and figure modules, not through each other:
    no module that holds stages (``core.workflow.stage_functions``) imports another."""
    import ast


    modules = {target.split(":")[0] for target in STAGES.values()}
    assert len(modules) > 5
    for module in sorted(modules):
        path = code_digest.ROOT.parent / f"{module.replace('.', '/')}.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                    a.name for a in node.names]
                names += [f"{node.module}.{a.name}" for a in getattr(node, "names", [])
                          if isinstance(node, ast.ImportFrom)]
                others = [n for n in names if n in modules - {module}]
                assert not others, f"{module} imports {others}"
