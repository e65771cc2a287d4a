"""Two sets of sheets rendered one after the other in one process: each gets its own docs.

What the rendering keeps from one page to the next (escaped texts, resolved folders,
file names shown relative to the project) must never carry over to another registry:
the docs of each set, rendered in one process after the other, are the bytes a fresh
process writes for that set alone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.render import describe
from jobdef.render.docs import render_docs
from jobdef.sheets.pipeline import load_registry

REPO = Path(__file__).resolve().parents[2]
AS_OF = "2026-03-07"


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _projects(tmp_path: Path) -> tuple[Path, Path]:
    """The example sheets, and a copy with other defaults (other values, other lines)
    and one job fewer, both at the same relative path ``jobdefs``."""
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(REPO / "jobdefs", first / "jobdefs")
    shutil.copytree(REPO / "jobdefs", second / "jobdefs")
    defaults = second / "jobdefs" / "defaults.yaml"
    text = defaults.read_text("utf-8")
    assert "owner: platform-team\n" in text
    assert "max_attempts: 3\n" in text
    text = text.replace("owner: platform-team\n", "# one line more above\nowner: data-team\n")
    defaults.write_text(text.replace("max_attempts: 3\n", "max_attempts: 4\n"), "utf-8")
    (second / "jobdefs" / "export_csv.yaml").unlink()
    return first, second


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.slow
def test_two_registries_in_one_process_write_what_a_fresh_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str
) -> None:
    first, second = _projects(tmp_path)
    out = f"docs-{lang}"
    argv = ["docs", "--sheets", "jobdefs", "--lang", lang, "--as-of", AS_OF]
    for project in (first, second, first, second):  # the same relative paths each time
        monkeypatch.chdir(project)
        assert main([*argv, "--out", out]) == 0
    for project in (first, second):
        result = subprocess.run(
            [sys.executable, "-m", "jobdef", *argv, "--out", "fresh"],
            cwd=project,
            env={**os.environ},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert _digest(project / out) == _digest(project / "fresh")
    assert len(_digest(first / out)) == len(_digest(second / out)) + 1
    changed = {
        name
        for name, digest in _digest(second / out).items()
        if _digest(first / out)[name] != digest
    }
    assert "index.md" in changed
    assert "send_reservation_mail.md" in changed


def test_render_docs_of_two_registries_in_turn_equals_each_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _projects(tmp_path)
    rendered = {}
    for project in (first, second, first):
        monkeypatch.chdir(project)
        registry = load_registry([Path("jobdefs")])
        rendered.setdefault(project, []).append(render_docs(registry, "en", base="."))
    assert rendered[first][0] == rendered[first][1]
    assert rendered[first][0] != rendered[second][0]
    sheet = rendered[second][0]["send_reservation_mail.md"]
    assert "jobdefs/defaults.yaml" in sheet
    assert "../first" not in sheet


def test_a_file_is_shown_relative_to_the_base_in_the_current_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
    file = str(tmp_path / "first" / "jobdefs" / "a.yaml")
    monkeypatch.chdir(tmp_path / "first")
    assert describe.display_path(file, ".") == "jobdefs/a.yaml"
    monkeypatch.chdir(tmp_path / "second")
    assert describe.display_path(file, ".") == str(Path(file).as_posix())
    assert describe.display_path("jobdefs/a.yaml", ".") == "jobdefs/a.yaml"
