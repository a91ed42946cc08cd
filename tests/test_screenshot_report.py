"""scripts/screenshot_report.py: a page's first screen from a headless Chromium, or one line
saying what is missing (the capture is skipped where no Chromium is installed)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from PIL import Image

from tests.conftest import ROOT

SPEC = importlib.util.spec_from_file_location("screenshot_report",
                                              ROOT / "scripts" / "screenshot_report.py")
script = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(script)


def test_without_a_browser_the_command_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    page = tmp_path / "report.html"
    page.write_text("<p>x</p>")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert script.main([str(page), str(tmp_path / "shot.png")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: no browser found on PATH") and error.count("\n") == 1
    assert script.main([str(tmp_path / "missing.html")]) == 2
    assert "missing.html: no such file" in capsys.readouterr().err


@pytest.mark.skipif(not any(map(shutil.which, script.BROWSERS)), reason="no Chromium installed")
def test_the_screenshot_is_the_first_screen_after_the_pages_javascript(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<body style='margin:0'><div id='x'></div><script>"
                    "document.getElementById('x').style.cssText="
                    "'width:100%;height:4000px;background:rgb(255,0,0)'</script></body>")
    png = tmp_path / "out" / "shot.png"
    script.screenshot(page, png, (320, 200))
    with Image.open(png) as image:
        assert image.size == (320, 200)
        assert image.convert("RGB").getpixel((160, 100)) == (255, 0, 0)  # drawn by the script
