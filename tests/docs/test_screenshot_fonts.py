"""docs/dashboard_screenshots.py refuses to photograph the dashboard when no font covers
Japanese (the titles would be empty boxes), in one line naming the package to install.

fontconfig is real here: a configuration of the test's own that sees only a folder of
Latin fonts, the way a machine without fonts-noto-cjk does.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docs" / "dashboard_screenshots.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dashboard_screenshots", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LATIN_FONTS = Path("/usr/share/fonts/truetype/dejavu")  # Chromium's Debian package pulls it in


@pytest.fixture
def latin_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("fc-list") is None or not any(LATIN_FONTS.glob("*.ttf")):
        pytest.skip(f"no fc-list or no fonts in {LATIN_FONTS} (apt-get install fonts-dejavu-core)")
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f"  <dir>{LATIN_FONTS}</dir>\n  <cachedir>{tmp_path / 'cache'}</cachedir>\n"
        "</fontconfig>\n",
        "utf-8",
    )
    monkeypatch.setenv("FONTCONFIG_FILE", str(conf))
    listed = subprocess.run(["fc-list", ":lang=ja"], capture_output=True, text=True, check=True)
    assert listed.stdout == ""  # the configuration sees no Japanese font


def test_without_a_japanese_font_the_check_names_the_package(latin_only: None) -> None:
    reason = _script().missing_cjk_font()
    assert reason is not None
    assert "fc-list :lang=ja lists none" in reason
    assert reason.endswith("apt-get install fonts-noto-cjk")


def test_without_fc_list_the_check_names_fontconfig_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no fc-list on it
    reason = _script().missing_cjk_font()
    assert reason is not None
    assert reason.endswith("apt-get install fontconfig fonts-noto-cjk")


def test_the_script_refuses_in_one_line_and_photographs_nothing(
    latin_only: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _script()
    monkeypatch.setattr(script, "IMAGES", Path("/nonexistent/images"))  # never written
    assert script.main() == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "docs/dashboard_screenshots.py: no font covers Japanese (fc-list :lang=ja lists none), "
        "so the titles would be empty boxes: apt-get install fonts-noto-cjk"
    ]
