"""``sensitive`` args in the sheet: validate reads the keyword, enqueue keeps checking the
value by the rest of its schema, and no error message quotes a sensitive value.

Each test loads a real sheet and enqueues into a real SQLite queue; ``jobdef validate``
runs as the command line runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.errors import ArgsError
from jobdef.runtime.queue import connect
from jobdef.sheets.args_check import ArgsCheck
from jobdef.sheets.pipeline import load_registry, validate_sheets

SECRET = "Hunter2-correct-horse"

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sign_in
handler: app.jobs:sign_in
args:
{args}
max_attempts: 1
timeout: 30s
errors:
  default: fatal
"""


def write(folder: Path, args_yaml: str) -> Path:
    folder.mkdir(exist_ok=True)
    sheet = folder / "sign_in.yaml"
    sheet.write_text(SHEET.format(args=args_yaml), encoding="utf-8")
    return sheet


def test_an_error_about_a_sensitive_arg_names_the_rule_it_breaks_never_the_value(
    tmp_path: Path,
) -> None:
    sheet = write(
        tmp_path / "sheets",
        "  user: {type: string, minLength: 30}\n"
        "  password: {type: string, minLength: 30, sensitive: true}\n"
        "  pin: {type: string, pattern: '^[0-9]{4}$', sensitive: true}\n"
        "  api_token: {type: string, enum: [a, b]}\n"  # says nothing: its name decides
        "  smtp: {type: object, properties: {password: {type: string, minLength: 30}}}\n",
    )
    queue = connect(f"sqlite:///{tmp_path / 'jobs.db'}", load_registry([sheet]))
    try:
        with pytest.raises(ArgsError) as raised:
            queue.enqueue(
                "sign_in",
                {
                    "user": "ann-" + "x" * 8,
                    "password": SECRET,
                    "pin": SECRET,
                    "api_token": SECRET,
                    "smtp": {"password": SECRET},  # under a key that says secret
                },
            )
        message = str(raised.value)
        assert SECRET not in message
        assert "args.password: breaks `minLength: 30` (a sensitive value" in message
        assert 'args.pin: breaks `pattern: "^[0-9]{4}$"`' in message
        assert 'args.api_token: breaks `enum: ["a", "b"]`' in message
        assert "args.smtp.password: breaks `minLength: 30`" in message
        assert "'ann-xxxxxxxx' is too short" in message  # what is not secret is still quoted
        assert queue.backend.list_jobs() == []  # nothing was stored
        # The keyword changes what is shown, not what is accepted.
        stored = queue.enqueue(
            "sign_in",
            {
                "user": "u" * 30,
                "password": SECRET * 2,
                "pin": "1234",
                "api_token": "a",
                "smtp": {"password": SECRET * 2},
            },
        )
        record = queue.get(stored.id)
        assert record is not None
        assert record.args["password"] == SECRET * 2  # kept for the handler
    finally:
        queue.close()


def test_sensitive_keeps_the_fast_check_of_an_arg() -> None:
    check = ArgsCheck({"properties": {"password": {"type": "string", "sensitive": True}}})
    assert check.ready  # compiled by the fast checker: no jsonschema validator needed


def test_validate_warns_on_an_unmarked_secret_name_and_strict_fails_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sheets"
    write(folder, "  user: {type: string}\n  db_password: {type: string}")
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "sign_in.yaml:7:3: warning JD113 args.db_password: the name says it holds" in out
    assert "did you mean `db_password: {type: string, sensitive: true}`?" in out
    assert main(["validate", str(folder), "--strict"]) == 1
    capsys.readouterr()

    for marked in ("true", "false"):
        write(
            folder,
            f"  user: {{type: string}}\n  db_password: {{type: string, sensitive: {marked}}}",
        )
        assert main(["validate", str(folder), "--strict"]) == 0, capsys.readouterr().out
        assert "no findings" in capsys.readouterr().out


def test_sensitive_is_true_or_false(tmp_path: Path) -> None:
    write(tmp_path, "  password: {type: string, sensitive: 'yes'}")
    [finding] = validate_sheets([tmp_path]).diagnostics
    assert (finding.line, finding.column, finding.code) == (6, 39, "JD103")
    assert "args.password.sensitive: expected true or false" in finding.message
