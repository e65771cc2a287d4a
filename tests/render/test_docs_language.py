"""The language of the generated pages: recorded in the index, kept by plain `jobdef docs`
and checked by `jobdef docs --check`, so `--lang ja` once does not turn into a failing
check whose advice brings the English pages back."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.render.docs import GENERATED_MARK

REPO = Path(__file__).resolve().parents[2]
SHEETS = str(REPO / "jobdefs")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder with no pyproject.toml above it and no JOBDEF_LANG."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBDEF_LANG", raising=False)
    return tmp_path


def _docs(*extra: str) -> int:
    return main(["docs", "--sheets", SHEETS, "--out", "docs/jobs", *extra])


def test_the_index_records_the_language_on_its_second_line(project: Path) -> None:
    assert _docs("--lang", "ja") == 0
    lines = (project / "docs/jobs/index.md").read_text("utf-8").splitlines()
    assert lines[:2] == [GENERATED_MARK, "<!-- jobdef:lang ja -->"]


def test_check_after_lang_ja_checks_the_japanese_pages(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _docs("--lang", "ja") == 0
    capsys.readouterr()
    assert _docs("--check") == 0
    assert "up to date" in capsys.readouterr().err


def test_plain_docs_keeps_the_recorded_language(project: Path) -> None:
    assert _docs("--lang", "ja") == 0
    before = {p.name: p.read_bytes() for p in (project / "docs/jobs").iterdir()}
    assert _docs() == 0
    after = {p.name: p.read_bytes() for p in (project / "docs/jobs").iterdir()}
    assert after == before


def test_a_failing_check_names_the_language_its_advice_must_write(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _docs("--lang", "ja") == 0
    capsys.readouterr()
    assert _docs("--check", "--lang", "en") == 1
    err = capsys.readouterr().err
    assert "run `jobdef docs --lang en`" in err
    assert 'lang = "en"' in err


def test_a_declared_language_is_the_one_checked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.jobdef]\nlang = "en"\n', "utf-8")
    assert _docs("--lang", "ja") == 0
    capsys.readouterr()
    assert _docs("--check") == 1
    assert "run `jobdef docs` and commit" in capsys.readouterr().err
