"""A generated block of a page: the text between two marker lines, which ``python -m
workflow_lib docs`` rewrites and the rest of the page keeps."""

from __future__ import annotations


def between(page: str, begin: str, end: str, text: str) -> str:
    """``page`` with ``text`` (one or more lines) between its markers ``begin`` and ``end``."""
    if begin not in page or end not in page.split(begin, 1)[1]:
        raise ValueError(f"the page has no {begin} ... {end} block")
    head, rest = page.split(begin, 1)
    tail = rest.split(end, 1)[1]
    return f"{head}{begin}\n{text}\n{end}{tail}"
