"""Code digests of workflow stages, derived from their imports (no hand-kept lists).

A stage is ``module:function`` (``workflow_lib.core.registry.stages()``). Its code is: the stage
module, the package modules the *function* reaches through the stage module's top-level names (its
helpers, constants and imports, followed transitively inside that module), every package module
those import anywhere in their source (transitively), the ``__init__`` of each package on the way,
and the command line with what its ``_run_stage`` reaches. Only source files inside ``workflow_lib``
count; third-party imports do not, nor do the registries (``registry`` modules: they describe rules,
their config slices, outputs and resources, and compute nothing; a change to one shows in the jobs'
params and outputs). The digest is of the files' bytes, so a module that joins the import graph
later is picked up by the next digest. """

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE = "workflow_lib"
ROOT = Path(__file__).resolve().parents[1]  # the package folder
ENTRY = ("__main__", "_run_stage")  # what every stage job runs: ``python -m workflow_lib stage``
DESCRIPTIONS = "registry"  # modules of this name are not followed (see the module docstring)


def _module_file(module: str, root: Path) -> Path | None:
    """The source file of dotted ``module`` inside the package at ``root``, or ``None``."""
    parts = module.split(".")
    if parts[0] != PACKAGE or parts[-1] == DESCRIPTIONS:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PACKAGE, *parts])


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module name of ``from ... import`` in module ``importer``."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported(node: ast.Import | ast.ImportFrom, path: Path, root: Path) -> dict[str, str]:
    """Local name -> dotted module for one import statement (package modules and attributes
    of package modules resolve to the module that defines them)."""
    if isinstance(node, ast.Import):
        return {(a.asname or a.name.split(".")[0]): a.name for a in node.names}
    source = _absolute(node, _module_name(path, root), path.name == "__init__.py")
    out = {}
    for a in node.names:
        sub = f"{source}.{a.name}"
        out[a.asname or a.name] = sub if _module_file(sub, root) else source
    return out


def _with_parents(module: str, root: Path) -> set[Path]:
    """The file of ``module`` and the ``__init__`` of every package above it (run on import)."""
    parts = module.split(".")
    files = {_module_file(".".join(parts[:i]), root) for i in range(1, len(parts) + 1)}
    return {f for f in files if f is not None}


def _closure(modules: set[str], root: Path) -> set[Path]:
    """Every package file reached from ``modules`` through imports anywhere in their source."""
    seen: set[Path] = set()
    todo = [f for m in modules for f in _with_parents(m, root)]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _file_imports(path, path.read_text(), root):
            todo += _with_parents(module, root)
    return seen


@functools.cache
def _tree(text: str, filename: str) -> ast.Module:
    """The syntax tree of a source text (kept per text: a Snakemake plan digests every stage)."""
    return ast.parse(text, filename)


@functools.cache
def _file_imports(path: Path, text: str, root: Path) -> tuple[str, ...]:
    """The dotted modules that the source ``text`` of the file ``path`` imports anywhere."""
    return tuple(module for node in ast.walk(_tree(text, str(path)))
                 if isinstance(node, ast.Import | ast.ImportFrom)
                 for module in _imported(node, path, root).values())


def _function_imports(path: Path, function: str, root: Path) -> set[str]:
    """Package modules that ``function`` of the module at ``path`` reaches through the module's
    top-level names (followed transitively through its top-level definitions)."""
    return set(_reached(path, path.read_text(), function, root))


@functools.cache
def _reached(path: Path, text: str, function: str, root: Path) -> frozenset[str]:
    """``_function_imports`` of the module whose source is ``text`` (kept per text)."""
    tree = _tree(text, str(path))
    imports: dict[str, str] = {}
    definitions: dict[str, list[ast.AST]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports |= _imported(node, path, root)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            definitions.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        definitions.setdefault(name.id, []).append(node)
    if function not in definitions:
        raise KeyError(f"{path}: no top-level definition {function!r}")
    modules: set[str] = set()
    seen: set[str] = set()
    todo = [function]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in imports:
            modules.add(imports[name])
        for node in definitions.get(name, []):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import | ast.ImportFrom):  # imports inside the function
                    modules |= set(_imported(sub, path, root).values())
                elif isinstance(sub, ast.Name):
                    todo.append(sub.id)
    return frozenset(modules)


def stage_files(target: str, root: Path = ROOT) -> list[Path]:
    """The package source files stage ``target`` (``'workflow_lib.studies.x.y:function'``) runs,
    sorted; ``root``: the package folder (a copy of it in tests). The command line counts with
    what its ``_run_stage`` reaches, not its other commands."""
    module, function = target.split(":")
    path = _module_file(module, root)
    if path is None:
        raise KeyError(f"{target}: no module {module} under {root}")
    main = root / f"{ENTRY[0]}.py"
    modules = _function_imports(path, function, root) | {module.rpartition(".")[0], PACKAGE}
    modules |= _function_imports(main, ENTRY[1], root)
    # not the imports of the module's other stages, nor of the command line's other commands
    return sorted(_closure(modules, root) | {path, main})


def module_digest(module: str, root: Path = ROOT) -> str:
    """The digest of package module ``module`` and every package file it imports (transitively):
    changes when, and only when, one of them does."""
    return files_digest(sorted(_closure({module}, root)), root)


def files_digest(files: list[Path], root: Path = ROOT) -> str:
    """Short sha256 of the files' package-relative names and bytes."""
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def stage_digest(target: str, root: Path = ROOT) -> str:
    """The code digest of stage ``target``: changes when, and only when, a file it runs does."""
    return files_digest(stage_files(target, root), root)
