"""Reference documentation: the configuration page generated from the config schema, and a check
of the relative links in the Markdown documentation.

``configuration_page(load_schema())`` is the text of ``docs/configuration.md``; ``REGENERATE``
is the command that rewrites that file.
``check_links(root)`` lists the broken relative links of ``README.md`` and ``docs/**/*.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

LEAVES_OPEN = "x-paper-leaves-open"  # schema keyword: what the papers leave open about a key
OPEN_ANCHOR = "choices-the-papers-leave-open"
REGENERATE = (
    ".venv/bin/python -c \"from workflow_lib.config import load_schema; "
    "from workflow_lib.reference import configuration_page; "
    "open('docs/configuration.md','w').write(configuration_page(load_schema()))\""
)

_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
           ("exclusiveMaximum", "<"))  # fmt: skip


def iter_properties(node: dict, prefix: str = "") -> Iterator[tuple[str, dict]]:
    """Every property below the schema ``node`` at every depth, as ``(dotted key, node)`` pairs,
    parents before their children, in the schema's order."""
    for key, sub in node.get("properties", {}).items():
        dotted = f"{prefix}.{key}" if prefix else key
        yield dotted, sub
        yield from iter_properties(sub, dotted)


def _code(value: Any) -> str:
    """A JSON value as a Markdown code span."""
    return f"`{json.dumps(value, ensure_ascii=False)}`"


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


def _constraints(node: dict) -> list[str]:
    """The constraints of one schema node (not of its items), in words."""
    out = []
    if "enum" in node:
        out.append("one of " + ", ".join(_code(v) for v in node["enum"]))
    out += [f"{op} {node[k]}" for k, op in _BOUNDS if k in node]
    if "multipleOf" in node:
        out.append(f"multiple of {node['multipleOf']}")
    if "minLength" in node:
        out.append(f"at least {node['minLength']} character(s)")
    if "minItems" in node:
        out.append(f"at least {node['minItems']} item(s)")
    if "maxItems" in node:
        out.append(f"at most {node['maxItems']} item(s)")
    if node.get("uniqueItems"):
        out.append("unique items")
    return out


def allowed(node: dict) -> str:
    """What a schema node allows beyond its type (range, enum, item constraints), or ``''``."""
    parts = _constraints(node)
    items = _constraints(node.get("items", {}))
    if items:
        parts.append("items " + " and ".join(items))
    return "; ".join(parts)


def _default(node: dict) -> str:
    return _code(node["default"]) if "default" in node else "—"


def _row(dotted: str, node: dict) -> str:
    text = node.get("description", "")
    if LEAVES_OPEN in node:
        text += f" Left open by the papers: see [below](#{OPEN_ANCHOR})."
    cells = (f"`{dotted}`", _type(node), _default(node), allowed(node) or "—", text.strip())
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def configuration_page(schema: dict) -> str:
    """The Markdown of ``docs/configuration.md``: an introduction, one section per top-level key
    with a table of every key below it (dotted key, type, default, allowed values,
    description), and the keys whose choice the papers leave open (``x-paper-leaves-open``)."""
    lines = [
        "# Configuration reference",
        "",
        "Every key of the workflow's configuration, with its type, default, allowed values and "
        "meaning. To change keys, write them in a YAML file and pass it to Snakemake with "
        "`--configfile FILE`: its keys are merged over those of `config.yaml` (the quick preset; "
        "`config/paper.yaml` holds the papers' protocol), and keys set in neither file take the "
        "defaults below. `python -m workflow_lib check-config FILE` validates a file against the "
        "schema (with these defaults for the keys it leaves out) and names the first invalid key "
        "in one line; the workflow validates its merged configuration the same way before any "
        "job starts. This page is generated from the config schema "
        "(`workflow_lib/schemas/config.schema.json` and each study's section, "
        "`workflow_lib/studies/<study>/config.schema.json`); "
        f"regenerate it with `{REGENERATE}`.",
    ]
    header = ["| key | type | default | allowed | description |", "|---|---|---|---|---|"]
    for key, node in schema.get("properties", {}).items():
        lines += ["", f"## `{key}`", ""]
        if "properties" in node:
            if node.get("description"):
                lines += [node["description"], ""]
            rows = [_row(dotted, sub) for dotted, sub in iter_properties(node, key)]
        else:
            rows = [_row(key, node)]
        lines += header + rows

    open_keys = [(k, n) for k, n in iter_properties(schema) if LEAVES_OPEN in n]
    lines += [
        "",
        "## Choices the papers leave open",
        "",
        "Keys whose setting the papers (Rende et al. 2024, \"Mapping of attention mechanisms to a "
        "generalized Potts model\"; Tiberi et al. 2024, \"Dissecting the interplay of attention "
        "paths in a statistical mechanics theory of transformers\") do not determine: the "
        "default is the project's choice.",
        "",
        "| key | default | what the papers leave open |",
        "|---|---|---|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in (f"`{k}`", _default(n), n[LEAVES_OPEN]))
              + " |" for k, n in open_keys]  # fmt: skip
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
