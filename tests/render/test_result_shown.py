"""The docs, the TSV and ``jobdef explain`` say what becomes of a job's return value, in both
languages. A job whose sheet and Defaults declare no ``result:`` keeps the 13 rows of the
classic sheet exactly (the example sheets' golden TSV holds that); one that declares it
gets a 14th, and the overview a result column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.cli import main
from jobdef.render.docs import render_docs
from jobdef.render.tsv import job_tsv, overview_tsv
from jobdef.sheets.pipeline import load_registry

SHEETS = """\
apiVersion: jobdef/v1
kind: Channel
name: ops-log
type: log
---
apiVersion: jobdef/v1
kind: Defaults
errors: {default: retry}
retention: {done: 30d}
---
apiVersion: jobdef/v1
kind: Job
name: build_quote
handler: app.jobs:build_quote
args:
  order_id: {type: integer, public: true}
notify: {channel: ops-log, events: [dead, done]}
result:
  max_bytes: 16KiB
  schema:
    type: object
    properties: {total: {type: integer}, currency: {type: string}}
  public: [total, currency]
  notify: [total]
---
apiVersion: jobdef/v1
kind: Job
name: purge_cache
handler: app.jobs:purge_cache
notify: {channel: ops-log, events: [done]}
"""


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "jobdefs"
    folder.mkdir()
    (folder / "jobs.yaml").write_text(SHEETS, encoding="utf-8")
    return folder


def _rows(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines()]


def test_a_declared_result_is_a_row_after_the_13(sheets: Path) -> None:
    registry = load_registry([sheets])
    en = _rows(job_tsv(registry.job("build_quote"), registry))
    assert len(en) == 15
    assert en[-1][0] == "Result"
    assert en[-1][2] == (
        "stored (at most 16KiB, kept 30d like the job, checked against its schema); "
        "shown on receipts: total, currency; in the done notification: total"
    )
    ja = _rows(job_tsv(registry.job("build_quote"), registry, "ja"))
    assert ja[-1][0] == "結果"
    assert ja[-1][2] == (
        "保存する（16KiBまで、ジョブと同じ30日保持、スキーマで検査）。受付で表示: total、currency。"
        "完了通知に: total"
    )


def test_a_job_that_declares_none_keeps_its_13_rows(sheets: Path) -> None:
    registry = load_registry([sheets])
    rows = _rows(job_tsv(registry.job("purge_cache"), registry, "ja"))
    assert len(rows) == 14
    assert "結果" not in [row[0] for row in rows]
    notify = dict((row[0], row[2]) for row in rows)["通知先"]
    assert notify == "ops-log（log）へ、完了したとき"  # no result fields to carry


def test_the_notify_cell_names_the_fields_the_done_notification_carries(sheets: Path) -> None:
    registry = load_registry([sheets])
    cells = {row[0]: row[2] for row in _rows(job_tsv(registry.job("build_quote"), registry))}
    assert cells["Notify"] == (
        "ops-log (log) when a job goes dead or is done "
        "(done carries the receipt and the result's total)"
    )
    cells = {row[0]: row[2] for row in _rows(job_tsv(registry.job("build_quote"), registry, "ja"))}
    assert (
        cells["通知先"]
        == "ops-log（log）へ、退避したとき・完了したとき（完了時は受付番号と結果のtotalを添える）"
    )


def test_a_declared_result_without_notified_fields_says_done_carries_the_receipt(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "jobdefs"
    folder.mkdir()
    text = SHEETS.replace(
        "notify: {channel: ops-log, events: [done]}\n",
        ("notify: {channel: ops-log, events: [done]}\nresult: {public: true}\n"),
    )
    (folder / "jobs.yaml").write_text(text, encoding="utf-8")
    registry = load_registry([folder])
    en = {row[0]: row[2] for row in _rows(job_tsv(registry.job("purge_cache"), registry))}
    assert en["Notify"] == "ops-log (log) when a job is done (done carries the receipt)"
    ja = {row[0]: row[2] for row in _rows(job_tsv(registry.job("purge_cache"), registry, "ja"))}
    assert ja["通知先"] == "ops-log（log）へ、完了したとき（完了時は受付番号を添える）"


def test_an_arg_shown_on_receipts_says_so(sheets: Path) -> None:
    registry = load_registry([sheets])
    cells = {row[0]: row[2] for row in _rows(job_tsv(registry.job("build_quote"), registry))}
    assert cells["Arguments"] == "order_id (integer, shown on receipts)"


def test_the_overview_gets_a_result_column_that_every_job_fills(sheets: Path) -> None:
    registry = load_registry([sheets])
    header, quote, purge = _rows(overview_tsv(registry))
    assert header[-1] == "Result"
    assert quote[-1].startswith("stored (at most 16KiB")
    assert purge[-1] == "stored (at most 64KiB, kept 30d like the job)"
    assert len(header) == len(quote) == len(purge) == 14


def test_a_defaults_result_counts_as_declared_for_every_job(tmp_path: Path) -> None:
    folder = tmp_path / "jobdefs"
    folder.mkdir()
    text = SHEETS.replace("retention: {done: 30d}\n", "result: {store: false}\n")
    text = text.split("---\napiVersion: jobdef/v1\nkind: Job\nname: build_quote")[0]
    text += "---\napiVersion: jobdef/v1\nkind: Job\nname: ping\nhandler: app.jobs:ping\n"
    (folder / "jobs.yaml").write_text(text, encoding="utf-8")
    registry = load_registry([folder])
    rows = _rows(job_tsv(registry.job("ping"), registry))
    assert rows[-1] == ["Result", rows[-1][1], "not stored (the return value is dropped)"]


def test_the_docs_page_has_the_row_and_the_fields(sheets: Path) -> None:
    pages = render_docs(load_registry([sheets]), "ja")
    page = pages["build_quote.md"]
    assert "| 結果 | 戻り値を残すか、大きさと期間、誰に見せるか | 保存する（16KiBまで" in page
    assert "| result.max_bytes | 16KiB | シート " in page
    assert "| result.retention | 30日（retention.done） | 組み込みの既定値 |" in page
    assert "| result.public | total、currency | シート " in page
    assert "| 結果 |" not in pages["purge_cache.md"]


def test_explain_says_it_in_text_and_json(sheets: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "build_quote", "--sheets", str(sheets)]) == 0
    text = capsys.readouterr().out
    assert "What the handler returns\n  stored (at most 16KiB, kept 30d like the job" in text
    assert main(["explain", "build_quote", "--sheets", str(sheets), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["result"] == {
        "declared": True,
        "store": True,
        "max_bytes": 16384,
        "retention": 30 * 86400.0,
        "retention_inherited": True,
        "schema": {
            "type": "object",
            "properties": {"total": {"type": "integer"}, "currency": {"type": "string"}},
        },
        "public": ["total", "currency"],
        "notify": ["total"],
        "text": data["result"]["text"],
    }
    assert data["items"][-1]["key"] == "result"
    fields = {row["path"]: row for row in data["fields"]}
    assert fields["result.max_bytes"]["value"] == "16KiB"
    assert fields["result.max_bytes"]["source"] == "sheet"
    assert main(["explain", "purge_cache", "--sheets", str(sheets), "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["result"]["declared"] is False
    assert [item["key"] for item in plain["items"]][-1] == "retention"
