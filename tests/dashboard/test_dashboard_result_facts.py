"""What the job page says of a result in each case the sheet and the row leave: kept
(size, expiry), deleted by result.retention, never returned, not stored by the sheet,
no sheet, and nothing for a job that is not done."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jobdef.backends.records import JobRecord
from jobdef.dashboard.results import result_facts
from jobdef.dashboard.views import shown
from jobdef.sheets.pipeline import load_registry

SHEETS = Path(__file__).resolve().parent / "result_sheets"
ENDED = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC

DONE = JobRecord(
    id=3,
    job="quote_order",
    queue="default",
    priority=0,
    args={"order_id": 1},
    state="done",
    attempt=1,
    max_attempts=1,
    idempotency_key=None,
    run_after=ENDED,
    created_at=ENDED,
    updated_at=ENDED,
    finished_at=ENDED,
    result={"total": 5, "name": "日本"},
)


def _facts(record: JobRecord, job: str | None = "quote_order", now: float = ENDED + 60):
    policy = load_registry([SHEETS]).job(job) if job else None
    return result_facts(record, policy, now, shown)


def test_a_kept_value_has_its_stored_size_and_expiry() -> None:
    facts = _facts(DONE)
    assert facts is not None
    assert facts["stored"] is True
    assert facts["size"] == len('{"total":5,"name":"日本"}'.encode())
    assert facts["expires"] == "expires 2026-01-01 00:30:00 UTC (result.retention: 30m)"


def test_a_value_past_its_retention_is_said_deleted() -> None:
    facts = _facts(replace(DONE, result=None), now=ENDED + 3600)
    assert facts == {
        "stored": False,
        "why": "deleted 2026-01-01 00:30:00 UTC, 30m after the job ended (result.retention)",
    }


def test_no_value_within_retention_means_the_handler_returned_none() -> None:
    facts = _facts(replace(DONE, result=None))
    assert facts == {"stored": False, "why": "none stored: the handler returned nothing"}


def test_a_sheet_that_stores_nothing_says_so_whatever_the_row_holds() -> None:
    facts = _facts(replace(DONE, job="warm_cache"), job="warm_cache")
    assert facts == {"stored": False, "why": "not stored (result.store: false)"}


def test_without_a_sheet_the_value_is_shown_with_no_expiry() -> None:
    facts = _facts(DONE, job=None)
    assert facts is not None
    assert facts["stored"] is True
    assert "retention is unknown" in facts["expires"]


def test_a_job_that_is_not_done_has_no_result_block() -> None:
    assert _facts(replace(DONE, state="running", result=None)) is None
