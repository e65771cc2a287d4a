"""`jobdef new`: a commented sheet with every field that loads clean and inherits from Defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from jobdef.cli import main
from jobdef.sheets.pipeline import load_registry
from jobdef.sheets.schema_check import schema, schema_text
from support.sheet_repo import edit, fill_placeholders, write_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with sheets in ``jobdefs/``, as the working directory; returns the sheets."""
    sheets = write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in ("JOBDEF_SHEETS", "JOBDEF_LANG"):
        monkeypatch.delenv(name, raising=False)
    return sheets


def _job_fields() -> set[str]:
    return set(schema()["definitions"]["Job"]["properties"])


def _keys_written(text: str) -> set[str]:
    """Top-level keys present in the sheet, whether as a value or commented out."""
    keys = set()
    for line in text.splitlines():
        bare = line.removeprefix("# ")
        if bare[:1].isalpha() and ":" in bare:
            keys.add(bare.split(":", 1)[0])
    return keys


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_new_sheet_has_every_field_and_loads_clean(
    project: Path, lang: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "send_invoice", "--lang", lang]) == 0
    target = project / "send_invoice.yaml"
    assert f"wrote {Path('jobdefs/send_invoice.yaml')}" in capsys.readouterr().out
    text = target.read_text("utf-8")
    assert _keys_written(text) >= _job_fields()
    # Each field line has its own comment right above it.
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line and not line.lstrip().startswith("#") and i > 3 and ":" in line:
            above = lines[i - 1].lstrip()
            assert above.startswith("#"), f"no comment above {line!r}"
    registry = load_registry([project])
    job = registry.job("send_invoice")
    # Fields the sheet leaves to Defaults are inherited, and say where from.
    assert job.max_attempts == 4
    assert job.origin("max_attempts").source == "defaults"
    assert job.notify.channel == "ops-chat"
    assert job.idempotency.key == "{record_id}:send_invoice"
    assert job.origin("idempotency.key").source == "sheet"


def test_comments_follow_the_language(project: Path) -> None:
    main(["new", "send_invoice", "--lang", "ja", "-o", "ja.yaml"])
    main(["new", "send_invoice", "--lang", "en", "-o", "en.yaml"])
    ja, en = Path("ja.yaml").read_text("utf-8"), Path("en.yaml").read_text("utf-8")
    assert "# 最大試行回数: 初回を含めて何回まで実行するか。" in ja
    assert "jobdefs/defaults.yaml の Defaults から継承" in ja
    assert "# How many times the job may run in total, the first run included." in en
    assert not re.search("[\u3040-\u30ff\u4e00-\u9fff]", en)  # English that is English
    assert str(project) not in en + ja  # no absolute path of this machine
    assert "(Inherited from Defaults in jobdefs/defaults.yaml; uncomment to override.)" in en


def test_defaults_values_are_shown_commented_so_the_job_keeps_inheriting(project: Path) -> None:
    main(["new", "send_invoice", "-o", "-"])
    text = Path("jobdefs/defaults.yaml").read_text()
    assert "max_attempts: 4" in text
    sheet = project / "sheet.yaml"
    main(["new", "send_invoice", "-o", str(sheet)])
    written = sheet.read_text("utf-8")
    assert "\n# max_attempts: 4\n" in written
    assert "\n  # initial: 10s\n" in written
    assert "\n  # channel: ops-chat\n" in written
    # A later Defaults change reaches the new job.
    edit(project / "defaults.yaml", "max_attempts: 4", "max_attempts: 7")
    assert load_registry([project]).job("send_invoice").max_attempts == 7


def test_copy_defaults_writes_them_as_the_sheets_own(project: Path) -> None:
    assert main(["new", "send_invoice", "--copy-defaults"]) == 0
    written = (project / "send_invoice.yaml").read_text("utf-8")
    assert "\nmax_attempts: 4\n" in written
    job = load_registry([project]).job("send_invoice")
    assert job.origin("max_attempts").source == "sheet"
    assert (job.backoff.initial, job.timeout, job.notify.channel) == (10.0, 30.0, "ops-chat")


def test_new_refuses_to_overwrite_a_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = project / "send_invoice.yaml"
    target.write_text("# mine\n", "utf-8")
    assert main(["new", "send_invoice"]) == 2
    err = capsys.readouterr().err
    assert "already exists and was left as it is" in err
    assert target.read_text("utf-8") == "# mine\n"


def test_new_refuses_a_name_another_sheet_defines(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "charge_card", "-o", "other.yaml"]) == 2
    assert "a job named 'charge_card' is already defined in jobdefs/charge_card.yaml" in (
        capsys.readouterr().err
    )
    assert not Path("other.yaml").exists()


def test_new_refuses_a_malformed_name(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "Send-Invoice"]) == 2
    assert "'Send-Invoice' is not a job name" in capsys.readouterr().err


def test_without_defaults_every_field_gets_a_starter_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBDEF_SHEETS", raising=False)
    assert main(["new", "send_invoice", "--sheets", "sheets"]) == 0
    text = Path("sheets/send_invoice.yaml").read_text("utf-8")
    # The project's copy of the schema, relative to the sheet, written when missing.
    assert text.startswith("# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json\n")
    assert Path(".jobdef/jobdef-v1.schema.json").read_text("utf-8") == schema_text()
    data = yaml.safe_load(text)
    assert data["max_attempts"] == 5
    assert data["errors"]["default"] == "retry"
    assert "notify" not in data  # no Channel to name yet: the block is there, commented out
    assert "# notify:" in text
    job = load_registry(["sheets"]).job("send_invoice")
    assert (job.backoff.strategy, job.timeout, job.retention.done) == (
        "exponential",
        30.0,
        30 * 86400.0,
    )


def test_schema_line_follows_the_existing_sheets(project: Path) -> None:
    (project.parent / "schema").mkdir()
    (project.parent / "schema" / "jobdef.json").write_text(schema_text(), "utf-8")
    (project / "charge_card.yaml").write_text(
        "# yaml-language-server: $schema=../schema/jobdef.json\n"
        + (project / "charge_card.yaml").read_text("utf-8"),
        "utf-8",
    )
    main(["new", "send_invoice"])
    first = (project / "send_invoice.yaml").read_text("utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../schema/jobdef.json"


def test_edited_new_sheet_shows_in_diff(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The new-user path: write a sheet, edit two fields, see the change in words."""
    main(["new", "send_invoice", "-o", "base/send_invoice.yaml"])
    base = Path("base")
    for file in project.iterdir():
        if file.name != "send_invoice.yaml":
            (base / file.name).write_text(file.read_text("utf-8"), "utf-8")
    main(["new", "send_invoice"])
    sheet = project / "send_invoice.yaml"
    edit(sheet, "# max_attempts: 4", "max_attempts: 8")
    edit(sheet, "# timeout: 30s", "timeout: 2m")
    capsys.readouterr()
    assert main(["diff", "base", "jobdefs", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "#### `send_invoice` (changed)" in out
    written = sheet.read_text("utf-8").splitlines()
    attempts_line, timeout_line = written.index("max_attempts: 8"), written.index("timeout: 2m")
    where = "sheet jobdefs/send_invoice.yaml"
    assert f"| `max_attempts` | `4` | `8` | {where}:{attempts_line + 1} |" in out
    assert f"| `timeout` | `30s` | `2m` | {where}:{timeout_line + 1} |" in out
    assert "Worst case from enqueue to the end of the last attempt" in out


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_new_sheet_fails_strict_only_on_its_todos_until_they_are_filled(
    project: Path, lang: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "send_invoice", "--lang", lang]) == 0
    assert main(["new", "send_refund", "--lang", lang, "--copy-defaults"]) == 0
    capsys.readouterr()
    assert main(["validate", "--strict", str(project)]) == 1
    findings = [line for line in capsys.readouterr().out.splitlines() if " JD" in line]
    assert findings
    assert all(" warning JD321 " in line for line in findings), findings
    for name in ("send_invoice", "send_refund"):
        fill_placeholders(project / f"{name}.yaml")
    assert main(["validate", "--strict", str(project)]) == 0
    assert capsys.readouterr().out.strip().endswith("no findings")
