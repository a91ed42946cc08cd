"""Screenshot the first screen of an HTML page, the Snakemake report's front page, in a headless
Chromium: what a reader sees on opening it.

Usage: ``python scripts/screenshot_report.py [REPORT [PNG]] [--size WIDTHxHEIGHT]``; ``REPORT``
defaults to ``report.html`` (written by ``snakemake --report report.html``), ``PNG`` to
``docs/report_front_page.png``, the size to 1280x900. Needs Chromium on ``PATH`` (``chromium``,
``chromium-browser`` or ``google-chrome``; Debian: ``apt-get install chromium``); the browser
runs without network, extensions or a profile of its own beyond a temporary one.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")
WAIT_MS = 5000  # the report builds its page in JavaScript after loading


class ScreenshotError(RuntimeError):
    """The page could not be captured; the message is one line for the user."""


def browser() -> str:
    """The path of the first of ``BROWSERS`` on ``PATH``."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise ScreenshotError(f"no browser found on PATH (tried {', '.join(BROWSERS)}); install "
                          "Chromium, e.g. apt-get install chromium")


def screenshot(page: Path, png: Path, size: tuple[int, int] = (1280, 900)) -> None:
    """Write the first ``size`` (width, height) pixels of ``page`` as rendered by a headless
    Chromium to ``png``."""
    if not page.is_file():
        raise ScreenshotError(f"{page}: no such file (write it with snakemake --report {page})")
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        command = [browser(), *FLAGS, f"--user-data-dir={profile}",
                   f"--virtual-time-budget={WAIT_MS}", f"--screenshot={png.resolve()}",
                   f"--window-size={size[0]},{size[1]}", page.resolve().as_uri()]
        run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if run.returncode != 0 or not png.is_file():
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise ScreenshotError(f"{command[0]} exited with {run.returncode}: {last}")


def _size(text: str) -> tuple[int, int]:
    width, _, height = text.partition("x")
    return int(width), int(height)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", nargs="?", default="report.html", type=Path)
    parser.add_argument("png", nargs="?", default="docs/report_front_page.png", type=Path)
    parser.add_argument("--size", default="1280x900", type=_size, help="WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    try:
        screenshot(args.report, args.png, args.size)
    except ScreenshotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
