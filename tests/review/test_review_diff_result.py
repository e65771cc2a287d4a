"""`jobdef diff` on a sheet's ``result:``: every field's change is reported, and the changes
that hurt callers reading stored values are consequences with a sentence in both languages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jobdef.review.diff import JobChange, RegistryDiff, diff_registries
from jobdef.review.render import render
from jobdef.sheets.pipeline import load_registry
from support.sheet_repo import edit, write_project

RESULT = """\
result:
  max_bytes: 64KiB
  retention: 7d
  schema: {type: object, properties: {total: {type: integer}, lines: {type: array}}}
  public: [total]
"""


@pytest.fixture
def old_sheets(tmp_path: Path) -> Path:
    sheets = write_project(tmp_path / "old")
    path = sheets / "charge_card.yaml"
    path.write_text(path.read_text("utf-8") + RESULT, encoding="utf-8")
    return sheets


@pytest.fixture
def new_sheets(old_sheets: Path, tmp_path: Path) -> Path:
    target = tmp_path / "new" / "jobdefs"
    shutil.copytree(old_sheets, target)
    return target


def _diff(old: Path, new: Path) -> RegistryDiff:
    return diff_registries(load_registry([old]), load_registry([new]))


def _card(diff: RegistryDiff) -> JobChange:
    return next(job for job in diff.jobs if job.name == "charge_card")


def _kinds(job: JobChange) -> dict[str, str]:
    return {c.kind: c.severity for c in job.consequences}


def _card_edit(sheets: Path, old: str, new: str) -> None:
    edit(sheets / "charge_card.yaml", old, new)


def test_each_result_field_change_is_reported(old_sheets: Path, new_sheets: Path) -> None:
    _card_edit(new_sheets, "max_bytes: 64KiB", "max_bytes: 128KiB")
    _card_edit(new_sheets, "public: [total]", "public: [total]\n  notify: [total]")
    change = _card(_diff(old_sheets, new_sheets))
    fields = {c.path: (c.before, c.after) for c in change.fields}
    assert fields == {"result.max_bytes": (65536, 131072), "result.notify": ([], ["total"])}
    assert not change.consequences  # a larger bound and a new notified field hurt nobody
    text = render(_diff(old_sheets, new_sheets), "old", "new")
    assert "64KiB → 128KiB" in next(line for line in text.splitlines() if "result.max" in line)


def test_results_no_longer_stored_warn(old_sheets: Path, new_sheets: Path) -> None:
    _card_edit(new_sheets, RESULT, "result: {store: false}\n")
    change = _card(_diff(old_sheets, new_sheets))
    assert _kinds(change) == {"result_not_stored": "warning"}
    assert {c.path for c in change.fields} >= {"result.store", "result.schema"}


def test_results_kept_shorter_is_breaking(old_sheets: Path, new_sheets: Path) -> None:
    _card_edit(new_sheets, "retention: 7d", "retention: 1d")
    diff = _diff(old_sheets, new_sheets)
    facts = [c.facts for c in _card(diff).consequences if c.kind == "result_retention_cut"]
    assert facts == [{"before": 7 * 86400.0, "after": 86400.0}]
    assert diff.breaking
    report = json.loads(render(diff, "old", "new", "json", "ja"))
    messages = [c["message"] for job in report["jobs"] for c in job["consequences"]]
    cut = "結果の保存期間を短縮（7日 → 1日）: 完了から1日より経った結果は次の削除で消える。"
    assert cut in messages


def test_a_retention_done_cut_is_said_once_for_results_that_follow_it(
    old_sheets: Path, new_sheets: Path
) -> None:
    edit(new_sheets / "defaults.yaml", "done: 30d", "done: 10d")
    diff = _diff(old_sheets, new_sheets)
    send = next(job for job in diff.jobs if job.name == "send_receipt")
    assert [c.kind for c in send.consequences] == ["retention_cut"]
    assert {c.path for c in send.fields} == {"retention.done", "result.retention"}


def test_a_lower_bound_and_a_new_schema_warn(old_sheets: Path, new_sheets: Path) -> None:
    _card_edit(new_sheets, "max_bytes: 64KiB", "max_bytes: 4KiB")
    _card_edit(new_sheets, "lines: {type: array}", "lines: {type: array, maxItems: 10}")
    diff = _diff(old_sheets, new_sheets)
    assert _kinds(_card(diff)) == {"result_bytes_lowered": "warning", "result_schema": "warning"}
    text = render(diff, "old", "new")
    assert "! result.max_bytes lowered from 64KiB to 4KiB: a return value over 4KiB now" in text


def test_receipts_showing_more_warn(old_sheets: Path, new_sheets: Path) -> None:
    _card_edit(new_sheets, "public: [total]", "public: [total, lines]")
    change = _card(_diff(old_sheets, new_sheets))
    assert [(c.kind, c.facts) for c in change.consequences] == [
        ("result_public_widened", {"fields": ["lines"]})
    ]
    _card_edit(new_sheets, "public: [total, lines]", "public: true")
    change = _card(_diff(old_sheets, new_sheets))
    assert [(c.kind, c.facts) for c in change.consequences] == [
        ("result_public_widened", {"fields": None})
    ]
    _card_edit(new_sheets, "public: true", "public: []")
    assert not _card(_diff(old_sheets, new_sheets)).consequences  # showing less hurts nobody
