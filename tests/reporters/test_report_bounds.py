"""A sheet written to flood the report gets a bounded one: many findings of one rule in
one file end in one finding that counts the rest, and a long source line is echoed as the
part around the column, in every text report, so the output grows with the sheet at most
linearly, however its findings crowd one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.sheets.diagnostics import MAX_PER_RULE
from jobdef.sheets.words import MAX_LISTED

CHANNEL = "apiVersion: jobdef/v1\nkind: Channel\nname: ops\ntype: log\ndescription: the ops log\n"


def sheet(key_args: str) -> str:
    return (
        "apiVersion: jobdef/v1\nkind: Job\nname: send_mail\nhandler: shop.mail:send\n"
        "queue: mail\nargs:\n  rid: {type: integer}\nmax_attempts: 5\n"
        "backoff: {strategy: fixed, initial: 10s}\ntimeout: 30s\nerrors: {default: retry}\n"
        f"notify:\n  channel: ops\n  events: [dead]\n  key_args: [{key_args}]\n"
    )


@pytest.fixture
def flood(tmp_path: Path) -> Path:
    names = ", ".join(f"n{i:05d}" for i in range(20_000))  # 160 KB on one line
    (tmp_path / "channels.yaml").write_text(CHANNEL, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(sheet(names), encoding="utf-8")
    return tmp_path


def test_twenty_thousand_findings_on_one_line_give_a_report_of_kilobytes(
    flood: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(flood)]) == 1
    out = capsys.readouterr().out
    findings = [line for line in out.splitlines() if " error JD255 " in line]
    assert len(findings) == MAX_PER_RULE + 1
    assert "'n00049', which is no arg of job 'send_mail'" in findings[MAX_PER_RULE - 1]
    last = findings[-1]
    assert last.startswith(f"{flood / 'job.yaml'}:15:414: error JD255 ")
    assert "19,950 more JD255 findings in this file, from here on, are not shown" in last
    assert out.endswith(f"2 files checked: {MAX_PER_RULE + 1} errors\n")
    assert len(out) < 40_000  # each excerpt cut to the part around its column


def test_the_cut_applies_to_every_format(flood: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(flood), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    codes = [d["code"] for d in data["diagnostics"]]
    assert codes == ["JD255"] * (MAX_PER_RULE + 1)
    assert main(["validate", str(flood), "--format", "sarif"]) == 1
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert len(run["results"]) == MAX_PER_RULE + 1


def test_a_long_line_is_echoed_around_the_column_with_the_caret_under_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ", ".join(["rid"] * 3000 + ["missing"] + ["rid"] * 3000)
    (tmp_path / "channels.yaml").write_text(CHANNEL, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(sheet(names), encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    [at] = [i for i, line in enumerate(lines) if " error JD255 " in line]
    source, caret = lines[at + 1], lines[at + 2]
    assert source.startswith(" 15 | ...")
    assert source.endswith("...")
    assert len(source) < 200
    column = caret.index("^")
    assert source[column:].startswith("missing, rid")


def test_a_short_line_is_echoed_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "channels.yaml").write_text(CHANNEL, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(sheet("rid, missing"), encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == " 15 |   key_args: [rid, missing]"
    assert lines[2] == "    |                   ^"


def test_a_name_defined_thousands_of_times_lists_a_few_places_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "channels.yaml").write_text("---\n".join([CHANNEL] * 3000), encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"{tmp_path / 'channels.yaml'}:3:7: error JD273 ")
    assert first.count("channels.yaml:") == 1 + MAX_LISTED
    assert "and 2,979 more; rename one of them" in first
    assert out.count("  see also ") == MAX_LISTED * MAX_PER_RULE
    assert "2,950 more JD273 findings in this file" in out


def test_a_message_lists_a_few_of_thousands_of_args(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ", ".join(f"a{i:04d}: {{type: integer}}" for i in range(2000))
    text = sheet("nope").replace("args:\n  rid: {type: integer}\n", f"args: {{{args}}}\n")
    (tmp_path / "channels.yaml").write_text(CHANNEL, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(text, encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    [finding] = [line for line in capsys.readouterr().out.splitlines() if " JD255 " in line]
    assert "(args: a0000, a0001, " in finding
    assert f"a{MAX_LISTED - 1:04d} and {2000 - MAX_LISTED:,} more); name one of" in finding
