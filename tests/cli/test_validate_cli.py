"""`jobdef validate` as a user runs it: formats, exit codes, and no traceback for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from jobdef.cli import main

REPO = Path(__file__).resolve().parents[2]
INVALID = REPO / "tests" / "sheets" / "invalid"


def _run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):
    return subprocess.run(
        [str(Path(sys.executable).parent / "jobdef"), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def test_example_sheets_pass_strict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(REPO / "jobdefs"), "--strict"]) == 0
    assert "no findings" in capsys.readouterr().out


def test_warnings_pass_unless_strict(capsys: pytest.CaptureFixture[str]) -> None:
    case = str(INVALID / "retry_unreachable")
    assert main(["validate", case]) == 0
    assert main(["validate", case, "--strict"]) == 1


def test_missing_path_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "does/not/exist"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "no such file or folder: does/not/exist" in err


def test_default_path_comes_from_tool_jobdef(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.jobdef]\nsheets = "defs"\n', encoding="utf-8")
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "x.yaml").write_text("kind: Jobb\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["validate"]) == 1
    assert "x.yaml:1:7: error JD104 kind: 'Jobb' is not allowed" in capsys.readouterr().out


def test_json_format_lists_every_finding(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(INVALID / "duplicate_job_name"), "--format", "json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["errors"] == 2
    assert {d["code"] for d in payload["diagnostics"]} == {"JD271"}
    assert payload["diagnostics"][0]["related"][0]["line"] == 3


def test_github_format_annotates_and_writes_the_summary_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["validate", str(INVALID / "not_an_exception"), "--format", "github"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("::error file=")
    assert ",line=16,col=11,title=JD232 not-an-exception::" in out[0]
    table = summary.read_text(encoding="utf-8")
    assert table.count("| error | JD232 |") == 2


def test_sarif_format_names_rules_and_regions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(INVALID / "enum_typo"), "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    run = sarif["runs"][0]
    result = run["results"][0]
    assert result["ruleId"] == "JD104"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "JD104"
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 9,
        "startColumn": 13,
    }


def test_junit_format_fails_the_file_with_findings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(INVALID / "duplicate_job_name"), "--format", "junit"]) == 1
    suite = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    assert suite.tag == "testsuite"  # the root, as the Ant schema requires
    assert suite.get("tests") == "2"
    assert suite.get("failures") == "2"


def test_check_imports_reports_handlers_and_classes_that_do_not_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "shop_jobs.py").write_text(
        "class NotAnError:\n    pass\n\nVALUE = 3\n", encoding="utf-8"
    )
    (tmp_path / "job.yaml").write_text(
        textwrap.dedent(
            """\
            apiVersion: jobdef/v1
            kind: Job
            name: shop
            handler: shop_jobs:VALUE
            max_attempts: 2
            errors:
              retry: [shop_jobs.NotAnError, shop_missing.Error]
              default: retry
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["validate", "job.yaml"]) == 0
    assert main(["validate", "job.yaml", "--check-imports"]) == 1
    out = capsys.readouterr().out
    assert "job.yaml:4:10: error JD302 handler shop_jobs:VALUE: shop_jobs:VALUE is a int" in out
    assert (
        "job.yaml:7:11: error JD235 errors.retry: shop_jobs.NotAnError is not an exception" in out
    )
    assert "job.yaml:7:33: error JD235 errors.retry: module shop_missing not found" in out


@pytest.mark.slow
def test_new_user_mistakes_give_one_message_and_no_traceback(tmp_path: Path) -> None:
    cases = {
        "typo.yaml": "apiVersion: jobdef/v1\nkind: Job\nname: a\nhandlr: m:f\n",
        "binary.yaml": b"\x00\x01\x02\xff",
        "empty.yaml": "",
        "dup.yaml": "apiVersion: jobdef/v1\napiVersion: jobdef/v1\nkind: Channel\n",
    }
    for name, content in cases.items():
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        result = _run("validate", str(folder))
        assert result.returncode == 1, result
        assert "Traceback" not in result.stdout + result.stderr
        assert f"{path}:" in result.stdout
    (tmp_path / "nothing").mkdir()
    result = _run("validate", str(tmp_path / "nothing"))
    assert result.returncode == 1
    assert "no *.yaml or *.yml sheets" in result.stdout
    result = _run("validate", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_rules_doc_is_up_to_date() -> None:
    from jobdef.sheets.rules import all_rules, rules_markdown

    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == rules_markdown()
    ids = [rule.id for rule in all_rules()]
    assert len(ids) == len(set(ids))


def test_validate_does_not_import_the_runtime_or_jsonschema_for_valid_sheets() -> None:
    # Nor what only some runs need: `referencing` (an arg with a $ref), the channels'
    # settings (--check-env), the import probe (--check-imports), the configuration
    # (no PATH given).
    code = (
        "import sys; from jobdef.cli import main; "
        f"rc = main(['validate', {str(REPO / 'jobdefs')!r}]); "
        "bad = [m for m in ('jsonschema', 'referencing', 'jinja2', 'psycopg', 'sqlite3', "
        "'jobdef.backends.protocol', 'jobdef.policy.channels', "
        "'jobdef.sheets.rules.imports', 'jobdef.project') "
        "if m in sys.modules]; print(rc, bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().endswith("0 []")


def test_every_schema_property_has_a_description() -> None:
    from jobdef.sheets.schema_check import schema

    missing: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                if not isinstance(sub, dict) or not sub.get("description"):
                    missing.append(f"{path}.{name}")
            for key, sub in node.items():
                if key != "if":  # conditions on `kind`, not field definitions
                    walk(sub, f"{path}.{key}")
        elif isinstance(node, list):
            for index, sub in enumerate(node):
                walk(sub, f"{path}[{index}]")

    walk(schema(), "$")
    assert missing == []


def test_github_annotations_escape_newlines_and_property_separators() -> None:
    from jobdef.reporters import Report, render
    from jobdef.sheets.diagnostics import Diagnostic

    diagnostic = Diagnostic("a,b:c.yaml", 3, 5, "error", "JD101", "50% bad\nsecond line")
    out = render("github", Report([diagnostic], ["a,b:c.yaml"]))
    assert out.splitlines()[0] == (
        "::error file=a%2Cb%3Ac.yaml,line=3,col=5,title=JD101::50%25 bad%0Asecond line"
    )


def test_text_caret_accounts_for_wide_characters(tmp_path: Path) -> None:
    from jobdef.reporters import Report, render
    from jobdef.sheets.diagnostics import Diagnostic

    sheet = tmp_path / "s.yaml"
    sheet.write_text("title: 予約 x\n", encoding="utf-8")
    diagnostic = Diagnostic(str(sheet), 1, 11, "error", "JD103", "m")
    lines = render("text", Report([diagnostic], [str(sheet)])).splitlines()
    assert lines[1] == " 1 | title: 予約 x"
    assert lines[2] == "   | " + " " * 12 + "^"


def test_credentials_are_never_echoed_in_the_text_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", str(INVALID / "credential_in_channel")]) == 1
    out = capsys.readouterr().out
    assert "JD261" in out
    assert "s3cret" not in out
