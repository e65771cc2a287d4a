"""The docs, the TSV and ``jobdef explain`` say which args are sensitive (hidden wherever
args are shown), in both languages; they never hold an arg's value, so nothing else
changes, and the example sheets, with no secret among their args, read as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.render import describe
from jobdef.sheets.pipeline import load_registry

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sign_in
handler: app.jobs:sign_in
args:
  user: {type: string, description: the account}
  password: {type: string, sensitive: true, description: the account's password}
  api_token: {type: string, required: false}
  page_token: {type: string, sensitive: false, required: false}
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "sign_in.yaml").write_text(SHEET, encoding="utf-8")
    return folder


def test_the_args_item_says_which_args_are_sensitive(sheets: Path) -> None:
    job = load_registry([sheets]).job("sign_in")
    assert describe.item_value(job, "args", "en", {}) == (
        "user (the account), password (the account's password, sensitive), "
        "api_token (string, sensitive, optional), page_token (string, optional)"
    )
    assert describe.item_value(job, "args", "ja", {}) == (
        "user（the account）、password（the account's password、秘匿）、"
        "api_token（文字列、秘匿、任意）、page_token（文字列、任意）"
    )


def test_tsv_explain_and_docs_carry_the_note(
    sheets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tsv", "sign_in", "--sheets", str(sheets)]) == 0
    assert "password (the account's password, sensitive)" in capsys.readouterr().out
    assert main(["explain", "sign_in", "--sheets", str(sheets)]) == 0
    assert "password (the account's password, sensitive)" in capsys.readouterr().out
    out = tmp_path / "docs"
    assert main(["docs", "--sheets", str(sheets), "-o", str(out)]) == 0
    assert "password (the account's password, sensitive)" in (out / "sign_in.md").read_text()


@pytest.mark.parametrize(
    ("fmt", "where"),
    [
        ("sqs", "reads their bodies"),
        ("cloud-tasks", "show a task's body"),
        ("step-functions", "input and history show it"),
        ("temporal", "history shows activity inputs"),
        ("kubernetes", "take it from a Secret (env valueFrom.secretKeyRef)"),
    ],
)
def test_each_runtime_export_notes_that_its_runtime_shows_a_sensitive_arg(
    sheets: Path, fmt: str, where: str
) -> None:
    from jobdef.render.export import export

    done = export(load_registry([sheets]), fmt)
    notes = {note.field: note.text for note in done.notes if note.field.startswith("args.")}
    assert set(notes) == {"args.password", "args.api_token"}  # page_token says false
    assert notes["args.password"].startswith("sensitive in the sheet, but ")
    assert where in notes["args.password"]
    assert "sensitive in the sheet" in done.text  # in the output too, where it has room
