"""Every report format of `jobdef validate` in a project configured by [tool.jobdef]:
paths relative to the project root, SARIF valid against the SARIF 2.1.0 schema and
JUnit valid against the Ant and Jenkins xUnit schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from jobdef.cli import main
from support.external import external_data

BAD = "apiVersion: jobdef/v1\nkind: Job\nname: x\nhandlr: app.jobs:x\n"
GOOD = (
    "apiVersion: jobdef/v1\nkind: Channel\nname: ops-chat\ntype: log\n"
    "description: the operators' chat\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose sheets live in a folder with a space, run from a subfolder."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.jobdef]\nsheets = "jobs/my sheets"\n', encoding="utf-8"
    )
    sheets = tmp_path / "jobs" / "my sheets"
    sheets.mkdir(parents=True)
    (sheets / "bad é#1.yaml").write_text(BAD, encoding="utf-8")
    (sheets / "channels.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    return tmp_path


def _validate(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["validate", *args]) == 1
    return capsys.readouterr().out


def test_text_json_and_github_paths_are_relative_to_the_project_root(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _validate(capsys)
    assert text.startswith("jobs/my sheets/bad é#1.yaml:1:1: error JD102")
    assert str(project) not in text
    data = json.loads(_validate(capsys, "--format", "json"))
    assert {d["file"] for d in data["diagnostics"]} == {"jobs/my sheets/bad é#1.yaml"}
    github = _validate(capsys, "--format", "github")
    assert "::error file=jobs/my sheets/bad é#1.yaml,line=4,col=1," in github
    assert str(project) not in github + json.dumps(data)


def test_a_sheet_given_outside_the_root_keeps_its_path(
    project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "bad.yaml"
    outside.write_text(BAD, encoding="utf-8")
    assert _validate(capsys, str(outside)).startswith(f"{outside}:1:1: error JD102")
    sarif = json.loads(_validate(capsys, str(outside), "--format", "sarif"))
    artifact = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert artifact["artifactLocation"] == {"uri": outside.as_uri()}


def test_sarif_is_valid_relative_encoded_and_fingerprinted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema_file = external_data("report-formats") / "sarif" / "sarif-schema-2.1.0.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    sarif = json.loads(_validate(capsys, "--format", "sarif"))
    validator = jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.FormatChecker()
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(sarif)]
    assert errors == []
    run = sarif["runs"][0]
    assert run["originalUriBaseIds"] == {"PROJECTROOT": {"uri": project.as_uri() + "/"}}
    assert run["columnKind"] == "unicodeCodePoints"
    located = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r
        for r in run["results"]
    }
    unknown = located["JD101", 4]
    assert unknown["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "jobs/my%20sheets/bad%20%C3%A9%231.yaml",
        "uriBaseId": "PROJECTROOT",
    }
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert rules["JD101"]["helpUri"].endswith("/docs/rules.md#jd101")
    assert rules["JD101"]["help"]["text"].startswith("A misspelt field would otherwise")
    rules_md = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text("utf-8")
    assert all(f'<a id="{rule_id.lower()}"></a>' in rules_md for rule_id in rules)

    # Lines added above the finding move it, not its fingerprint.
    sheet = project / "jobs" / "my sheets" / "bad é#1.yaml"
    sheet.write_text("# a comment\n# and another\n" + BAD, encoding="utf-8")
    moved = json.loads(_validate(capsys, "--format", "sarif"))["runs"][0]["results"]
    after = {r["ruleId"]: r for r in moved}
    assert after["JD101"]["locations"][0]["physicalLocation"]["region"]["startLine"] == 6
    assert after["JD101"]["partialFingerprints"] == unknown["partialFingerprints"]
    assert after["JD102"]["partialFingerprints"] == located["JD102", 1]["partialFingerprints"]
    assert unknown["partialFingerprints"] != located["JD102", 1]["partialFingerprints"]


def test_sarif_columns_count_code_points(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sheet = project / "jobs" / "my sheets" / "bad é#1.yaml"
    sheet.write_text(BAD.replace("name: x", "name: 日本語🙂 x"), encoding="utf-8")
    sarif = json.loads(_validate(capsys, "--format", "sarif"))
    regions = [
        r["locations"][0]["physicalLocation"]["region"]
        for r in sarif["runs"][0]["results"]
        if r["ruleId"] == "JD105"
    ]
    text = _validate(capsys)
    assert sarif["runs"][0]["columnKind"] == "unicodeCodePoints"
    for region in regions:  # the text report's column for the same finding
        assert f":{region['startLine']}:{region['startColumn']}: error JD105" in text


def _xml_schema(path: Path) -> Any:
    from lxml import etree

    return etree.XMLSchema(etree.parse(str(path)))


@pytest.mark.parametrize("strict", [False, True])
def test_junit_is_valid_for_ant_and_jenkins(
    project: Path, capsys: pytest.CaptureFixture[str], strict: bool
) -> None:
    from lxml import etree

    formats = external_data("report-formats")
    (project / "jobs" / "my sheets" / "warn.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Channel\nname: other\ntype: log\ndescription: yes\n",
        encoding="utf-8",
    )
    (project / "jobs" / "my sheets" / "broken.yaml").write_text("a: [\n", encoding="utf-8")
    xml = _validate(capsys, "--format", "junit", *(["--strict"] if strict else []))
    document = etree.fromstring(xml.encode("utf-8"))
    schemas = (formats / "junit-ant" / "JUnit.xsd", formats / "junit-jenkins" / "junit-10.xsd")
    for schema_file in schemas:
        schema = _xml_schema(schema_file)
        assert schema.validate(document), f"{schema_file.name}: {schema.error_log}"
    suite = ET.fromstring(xml)
    assert suite.tag == "testsuite"
    assert {k: suite.get(k) for k in ("tests", "failures", "errors")} == {
        "tests": "4",
        "failures": "2" if strict else "1",
        "errors": "1",
    }
    assert float(suite.get("time", "")) >= 0
    assert suite.get("hostname")
    assert len(suite.get("timestamp", "")) == 19
    names = [case.get("name") for case in suite.iter("testcase")]
    assert "jobs/my sheets/bad é#1.yaml" in names
    assert str(project) not in xml
    out = suite.findtext("system-out") or ""
    assert ("JD009" in out) is not strict


def test_file_names_that_would_drive_a_terminal_are_shown_escaped_in_every_text_format(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sheet named with an ANSI escape, a bidi override and a byte that is not UTF-8:
    text, GitHub and JUnit show them escaped (JUnit stays well-formed XML), none raw."""
    import os

    folder = project / "jobs" / "my sheets"
    (folder / "paint\x1b[31m\u202eeman.yaml").write_text("a: [\n", encoding="utf-8")
    os.close(os.open(os.fsencode(folder) + b"/bad\xff.yaml", os.O_CREAT | os.O_WRONLY))
    (folder / "bad é#1.yaml").unlink()
    for fmt in ("text", "github", "junit"):
        out = _validate(capsys, "--format", fmt)
        assert "\x1b" not in out, fmt
        assert "\u202e" not in out, fmt
        assert "paint\\x1b[31m\\u202eeman.yaml" in out, fmt
        assert "bad\\udcff.yaml" in out, fmt
        out.encode("utf-8")  # no lone surrogate left to fail the write
    names = [
        case.get("name")
        for case in ET.fromstring(_validate(capsys, "--format", "junit")).iter("testcase")
    ]
    assert "jobs/my sheets/paint\\x1b[31m\\u202eeman.yaml" in names


def test_commands_that_load_sheets_name_files_relative_to_the_root(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["docs", "--check"], ["tsv"], ["explain", "x"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "\njobs/my sheets/bad é#1.yaml:4:1: error JD101" in err, command
        assert str(project) not in err
