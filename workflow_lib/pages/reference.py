"""Reference documentation: the configuration page generated from the config schema and the
presets, and a check of the relative links in the Markdown documentation.

``configuration_page(load_schema(), preset_configs())`` is the text of ``docs/configuration.md``;
``REGENERATE`` is the command that rewrites it and every other generated page.
``check_links(root)`` lists the broken relative links of ``README.md`` and ``docs/**/*.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import unquote

from workflow_lib.core.config import constraints
from workflow_lib.pages.presets import NOT_SET, values_table

LEAVES_OPEN = "x-paper-leaves-open"  # schema keyword: what the papers leave open about a key
OPEN_ANCHOR = "choices-the-papers-leave-open"
REGENERATE = ".venv/bin/python -m workflow_lib docs"
ITEM = "[]"  # a key below an array's items: ``proteins.families[].name``


def iter_properties(node: dict, prefix: str = "") -> Iterator[tuple[str, dict]]:
    """Every property below the schema ``node`` at every depth, as ``(dotted key, node)`` pairs,
    parents before their children, in the schema's order; the properties of an array's items
    below the array's key and ``ITEM`` (``proteins.families[].name``)."""
    for key, sub in node.get("properties", {}).items():
        dotted = f"{prefix}.{key}" if prefix else key
        yield dotted, sub
        yield from iter_properties(sub, dotted)
        yield from iter_properties(sub.get("items", {}), dotted + ITEM)


def _span(text: str) -> str:
    """Literal text as a Markdown code span."""
    return f"`{text}`"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _type(node: dict) -> str:
    """The type of a schema node in words, e.g. ``integer``, ``number or null``,
    ``array of string``."""
    if "type" in node:
        kind = node["type"]
        kind = " or ".join(kind) if isinstance(kind, list) else kind
    elif "enum" in node:
        names = {"str": "string", "bool": "boolean", "int": "integer", "float": "number"}
        kinds = dict.fromkeys(names.get(type(v).__name__, "value") for v in node["enum"])
        kind = " or ".join(kinds)
    else:
        kind = "value"
    if kind == "array" and "items" in node:
        kind = f"array of {_type(node['items'])}"
    return kind


def allowed(node: dict, required: bool = False) -> str:
    """What a schema node allows beyond its type, in the validator's words
    (``config.constraints``, the items' too), ``required`` if its object requires it; or
    ``''``."""
    parts = (["required"] if required else []) + constraints(node, _span)
    items = constraints(node.get("items", {}), _span)
    if items:
        parts.append("items " + " and ".join(items))
    return "; ".join(parts)


def _row(dotted: str, node: dict, required: bool) -> str:
    text = node.get("description", "")
    if LEAVES_OPEN in node:
        text += f" Left open by the papers: see [below](#{OPEN_ANCHOR})."
    cells = (f"`{dotted}`", _type(node), allowed(node, required) or "—", text.strip())
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _required(schema: dict) -> set[str]:
    """The dotted keys of ``schema`` that their object requires."""
    found = set(schema.get("required", ()))
    for dotted, node in iter_properties(schema):
        found |= {f"{dotted}.{k}" for k in node.get("required", ())}
        found |= {f"{dotted}{ITEM}.{k}" for k in node.get("items", {}).get("required", ())}
    return found


def configuration_page(schema: dict, presets: Mapping[str, dict]) -> str:
    """The Markdown of ``docs/configuration.md``: an introduction; one section per top-level key
    with a table of every key below it (dotted key, type, allowed values, description) and a
    table of the value each preset of ``presets`` (name -> its config, as
    ``presets.preset_configs`` reads them) runs with, one column for ``config.yaml`` and one for
    each preset that changes a value of the section; and the keys whose choice the papers leave
    open (``x-paper-leaves-open``)."""
    lines = [
        "# Configuration reference",
        "",
        "Every key of the workflow's configuration, with its type, allowed values and meaning, and "
        "the value each preset runs with. A preset is `config.yaml` (the quick preset: the "
        "Snakefile always reads it) or a file `config/NAME.yaml` merged over it with "
        "`--configfile config/NAME.yaml` (column `NAME`; [config/](../config/)): a mapping key by "
        "key, a list or a value replaced whole, and a key that neither file sets takes the "
        "schema's default. Each section shows `config.yaml` and every preset that changes one of "
        "its values; a preset not shown runs `config.yaml`'s values there. A value "
        f"{NOT_SET}: no file sets the key and the schema gives it no default (its description "
        "says what applies then).",
        "",
        "To change keys, write them in a YAML file of your own and merge it last with "
        "`--configfile`. `python -m workflow_lib check-config FILE...` validates files merged in "
        "order (the schema's defaults filling the keys they leave out) and names every invalid "
        "key, one line each in the words of the allowed column (a misspelt key with the allowed "
        "key closest to it), then their count; the workflow validates its "
        "merged configuration the same way before any job starts. This page is generated from "
        "the config schema (`workflow_lib/schemas/config.schema.json` and each study's section, "
        "`workflow_lib/studies/<study>/config.schema.json`) and the presets, with the other "
        f"generated pages, by `{REGENERATE}`.",
    ]
    required = _required(schema)
    header = ["| key | type | allowed | description |", "|---|---|---|---|"]
    for key, node in schema.get("properties", {}).items():
        lines += ["", f"## `{key}`", ""]
        keys = [(key, node)]
        if "properties" in node:
            if node.get("description"):
                lines += [node["description"], ""]
            keys = list(iter_properties(node, key))
        lines += header + [_row(dotted, sub, dotted in required) for dotted, sub in keys]
        leaves = [dotted for dotted, sub in keys if "properties" not in sub and ITEM not in dotted]
        lines += ["", "Values:", "", *values_table(presets, leaves)]

    open_keys = [(k, n) for k, n in iter_properties(schema) if LEAVES_OPEN in n]
    lines += [
        "",
        "## Choices the papers leave open",
        "",
        "Keys whose setting the papers (Rende et al. 2024, \"Mapping of attention mechanisms to a "
        "generalized Potts model\"; Tiberi et al. 2024, \"Dissecting the interplay of attention "
        "paths in a statistical mechanics theory of transformers\") do not determine: each "
        "preset's value, in the key's section, is the project's choice.",
        "",
        "| key | what the papers leave open |",
        "|---|---|",
    ]
    lines += [f"| [`{k}`](#{k.split('.')[0]}) | {_cell(n[LEAVES_OPEN])} |" for k, n in open_keys]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- link check

_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the Markdown ``text`` outside code blocks (fenced, or indented
    by four spaces after a blank line), with inline code spans removed."""
    fence, indented, blank = None, False, True
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence:
            if match and match.group(1) == fence:
                fence = None
            continue
        if match:
            fence = match.group(1)
            continue
        if line.strip() == "":
            blank = True
            continue
        indented = line.startswith("    ") and (blank or indented)
        blank = False
        if not indented:
            yield number, _CODE_SPAN.sub("", line)


def _broken(path: Path, root: Path) -> Iterator[str]:
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        for match in _LINK.finditer(line):
            target = match.group(1).strip("<>")
            if _SCHEME.match(target) or target.startswith("#"):
                continue  # an external address (http, https, mailto, ...) or an anchor
            file = unquote(target.split("#", 1)[0])
            resolved = root / file.lstrip("/") if file.startswith("/") else path.parent / file
            if not resolved.exists():
                yield f"{path.relative_to(root).as_posix()}:{number}: broken link {target}"


def check_links(root: Path) -> list[str]:
    """One line (``FILE:LINE: broken link TARGET``) per relative link of ``root/README.md`` and
    ``root/docs/**/*.md`` (Markdown ``[text](target)`` and ``![alt](target)``) whose target does
    not exist. External addresses and pure ``#anchors`` are skipped; a ``#fragment`` is
    stripped; links inside code are not links."""
    root = Path(root)
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    files += sorted((root / "docs").glob("**/*.md"))
    return [line for path in files for line in _broken(path, root)]
