"""Files jobdef reads and writes: symlinks are never followed, FIFOs and devices never read,
and a path that cannot be written or read is one line with exit 2, not a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobdef.cli import main

REPO = Path(__file__).resolve().parents[2]
SHEETS = REPO / "jobdefs"
SECRET = "credential-SECRET-42"


def _project(tmp_path: Path) -> Path:
    """A copy of the example sheets, and a file outside it that must stay unread."""
    shutil.copytree(SHEETS, tmp_path / "jobdefs")
    (tmp_path / "secret.yaml").write_text(f"token: {SECRET}\n", encoding="utf-8")
    return tmp_path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _one_line(output: str) -> str:
    assert "Traceback" not in output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    return lines[0]


def test_docs_never_writes_through_a_planted_temp_file_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    monkeypatch.chdir(project)
    out = project / "docs"
    out.mkdir()
    victim = project / "victim.txt"
    victim.write_text("untouched\n", encoding="utf-8")
    # The name the writer used for its temporary file before it drew random ones.
    for page in ("index.md", "export_csv.md"):
        (out / f".{page}.tmp").symlink_to(victim)
    code, output = _cli(capsys, "docs", "--sheets", "jobdefs", "--out", str(out))
    assert code == 0, output
    assert victim.read_text(encoding="utf-8") == "untouched\n"
    assert (out / "index.md").is_file()
    assert not (out / "index.md").is_symlink()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


@pytest.mark.parametrize("check", [True, False])
def test_docs_refuses_a_symlinked_page_without_showing_its_target(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    check: bool,
) -> None:
    project = _project(tmp_path)
    monkeypatch.chdir(project)
    out = project / "docs"
    assert main(["docs", "--sheets", "jobdefs", "--out", str(out)]) == 0
    capsys.readouterr()
    (out / "export_csv.md").unlink()
    (out / "export_csv.md").symlink_to(project / "secret.yaml")
    code, output = _cli(
        capsys, "docs", "--sheets", "jobdefs", "--out", str(out), *(["--check"] if check else [])
    )
    assert code == 2
    line = _one_line(output)
    assert "export_csv.md" in line
    assert "symlink" in line
    assert SECRET not in output
    assert (project / "secret.yaml").read_text(encoding="utf-8") == f"token: {SECRET}\n"


def test_docs_refuses_an_inject_file_that_is_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    monkeypatch.chdir(project)
    (project / "README.md").symlink_to(project / "secret.yaml")
    code, output = _cli(
        capsys, "docs", "--sheets", "jobdefs", "--out", "docs", "--check", "--inject", "README.md"
    )
    assert code == 2
    assert "symlink" in _one_line(output)
    assert SECRET not in output


@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_validate_refuses_a_symlinked_sheet_without_showing_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    project = _project(tmp_path)
    (project / "jobdefs" / "stolen.yaml").symlink_to(project / "secret.yaml")
    code, output = _cli(capsys, "validate", "--format", fmt, str(project / "jobdefs"))
    assert code == 2
    line = _one_line(output)
    assert "stolen.yaml" in line
    assert "symlink" in line
    assert SECRET not in output


def test_validate_refuses_a_symlinked_folder_named_or_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path)
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(project / "secret.yaml", elsewhere / "secret.yaml")
    (project / "linked").symlink_to(elsewhere, target_is_directory=True)
    (project / "jobdefs" / "more").symlink_to(elsewhere, target_is_directory=True)
    for target in ("linked", "jobdefs"):
        code, output = _cli(capsys, "validate", str(project / target))
        assert code == 2, output
        assert "symlink" in _one_line(output)
        assert SECRET not in output


@pytest.mark.slow
def test_validate_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    project = _project(tmp_path)
    os.mkfifo(project / "jobdefs" / "pipe.yaml")
    result = subprocess.run(
        [sys.executable, "-m", "jobdef", "validate", str(project / "jobdefs")],
        capture_output=True,
        text=True,
        timeout=60,  # before the change, the read waited for a writer forever
        check=False,
    )
    assert result.returncode == 2
    line = _one_line(result.stdout + result.stderr)
    assert "pipe.yaml" in line
    assert "FIFO" in line


def test_validate_refuses_a_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, output = _cli(capsys, "validate", "/dev/zero")
    assert code == 2
    assert "device" in _one_line(output)


def test_tsv_replaces_a_symlink_at_its_output_instead_of_writing_through_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n", encoding="utf-8")
    output = tmp_path / "jobs.tsv"
    output.symlink_to(victim)
    code, printed = _cli(capsys, "tsv", "--sheets", str(SHEETS), "-o", str(output))
    assert code == 0, printed
    assert victim.read_text(encoding="utf-8") == "untouched\n"
    assert not output.is_symlink()
    assert "export_csv" in output.read_text(encoding="utf-8")


def test_new_leaves_a_symlink_at_its_target_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    shutil.copy(SHEETS / "defaults.yaml", sheets)
    victim = tmp_path / "victim.yaml"
    (sheets / "planted.yaml").symlink_to(victim)  # dangling: writing through would create it
    code, output = _cli(capsys, "new", "planted", "--sheets", str(sheets))
    assert code == 2
    assert "already exists" in _one_line(output)
    assert not victim.exists()
    code, output = _cli(capsys, "new", "fresh_job", "--sheets", str(sheets))
    assert code == 2  # reading the sheets for their Defaults refuses the symlink
    assert "planted.yaml: is a symlink" in _one_line(output)
    (sheets / "planted.yaml").unlink()
    code, output = _cli(capsys, "new", "fresh_job", "--sheets", str(sheets))
    assert code == 0, output
    assert (sheets / "fresh_job.yaml").is_file()
    assert [p.name for p in sheets.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["tsv", "-o", "/nonexistent/x.tsv"], ("cannot write", "/nonexistent/x.tsv")),
        (["tsv", "-o", "{tmp}"], ("is a folder", "give a file name")),
        (["docs", "--out", "/proc/jobs"], ("cannot write", "/proc/jobs")),
        (["docs", "--inject", "{tmp}"], ("is a folder",)),
    ],
)
def test_an_unwritable_or_unreadable_path_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    words: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    code, output = _cli(capsys, *argv[:1], "--sheets", str(SHEETS), *argv[1:])
    assert code == 2
    line = _one_line(output)
    for word in words:
        assert word in line
