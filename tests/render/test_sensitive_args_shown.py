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
