"""``jobdef jobs``, ``jobs show`` (text and ``--format json``) and ``jobdef enqueue`` never
print a sensitive arg; the job store keeps it for the handler.

The commands run as the command line runs them, on a real SQLite store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.cli import main

PIN = "4711-0815"
PASSWORD = "Hunter2-correct-horse"

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sign_in
handler: app.jobs:sign_in
args:
  user: {type: string}
  pin: {type: string, sensitive: true}
  password: {type: string, minLength: 40, sensitive: true}
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""


@pytest.fixture
def project(tmp_path: Path) -> tuple[str, Path]:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "sign_in.yaml").write_text(SHEET, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    assert main(["db", "upgrade", "--db", url]) == 0
    return url, sheets


def _enqueue(url: str, sheets: Path, args: dict[str, str]) -> int:
    return main(
        ["enqueue", "sign_in", "--args", json.dumps(args), "--db", url, "--sheets", str(sheets)]
    )


def test_listings_show_sensitive_args_as_stars_in_text_and_json(
    project: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, sheets = project
    assert _enqueue(url, sheets, {"user": "ann", "pin": PIN, "password": PASSWORD * 2}) == 0
    capsys.readouterr()
    common = ["--db", url, "--sheets", str(sheets)]
    for command in (
        ["jobs"],
        ["jobs", "--format", "json"],
        ["jobs", "show", "1"],
        ["jobs", "show", "1", "--format", "json"],
    ):
        assert main([*command, *common]) == 0
        out, err = capsys.readouterr()
        for secret in (PIN, PASSWORD):
            assert secret not in out + err, command
        assert "ann" in out, command
        assert "***" in out, command
    assert main(["jobs", "show", "1", "--format", "json", *common]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["job"]["args"] == {"user": "ann", "pin": "***", "password": "***"}

    backend = open_backend(url)
    try:
        record = backend.get(1)
    finally:
        backend.close()
    assert record is not None
    assert record.args["pin"] == PIN  # the handler gets it whole


def test_without_loadable_sheets_names_decide_and_a_note_says_so(
    project: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, sheets = project
    assert _enqueue(url, sheets, {"user": "ann", "pin": PIN, "password": PASSWORD * 2}) == 0
    capsys.readouterr()
    (sheets / "sign_in.yaml").write_text(SHEET.replace("max_attempts: 1", "max_attempts: 0"))
    assert main(["jobs", "--db", url, "--sheets", str(sheets)]) == 0
    out, err = capsys.readouterr()
    assert PASSWORD not in out  # its name says secret
    assert PIN in out  # only the sheet said so, and the sheet does not load
    assert "args are hidden by their names alone" in err
    assert main(["jobs", "--db", url, "--sheets", str(tmp_path / "none")]) == 0
    out, err = capsys.readouterr()
    assert PASSWORD not in out
    assert err == ""


def test_enqueue_refuses_a_bad_sensitive_value_without_printing_it(
    project: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, sheets = project
    assert _enqueue(url, sheets, {"user": "ann", "pin": PIN, "password": PASSWORD}) == 2
    out, err = capsys.readouterr()
    assert PASSWORD not in out + err
    assert "args.password: breaks `minLength: 40` (a sensitive value: it is not shown)" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
