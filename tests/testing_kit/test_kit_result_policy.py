"""The kit holds a return value to its sheet's ``result:`` as the worker does, on its
virtual clock: a refused value is a failed attempt the sheet's ``errors`` classify,
``store: false`` keeps nothing, ``result.retention`` clears a result when the clock
passes it, and ``assert_result`` says which of these happened."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobdef.testing import VirtualQueue, open_queue

SHEETS = Path(__file__).parent / "result_sheets"


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[VirtualQueue]:
    with open_queue(SHEETS, folder=tmp_path, start=1_800_000_000) as queue:
        yield queue


def test_a_value_the_sheet_accepts_is_stored_and_read_back_exactly(kit: VirtualQueue) -> None:
    value = {"total": 12, "lines": [{"sku": "é", "n": 1.5}], "none": None}
    job = kit.enqueue("quote", {"value": value})
    kit.drain()
    assert kit.assert_result(job, value) == value
    assert kit.assert_result(job.job_id) == value


def test_a_value_breaking_the_schema_fails_the_attempt_and_the_sheet_retries_it(
    kit: VirtualQueue,
) -> None:
    job = kit.enqueue("quote", {"value": {"total": "12", "card": "4111-1111"}})
    kit.drain()
    kit.assert_state(job.job_id, "dead")
    attempts = kit.attempts(job.job_id)
    assert [a.outcome for a in attempts] == ["retry", "dead"]
    assert attempts[1].offset == 10.0  # the sheet's backoff, on the virtual clock
    message = attempts[0].error.message
    assert attempts[0].error.type == "jobdef.ResultRefused"
    assert message == (
        f"job {job.job_id} (quote) attempt 1: return value refused, it breaks result.schema "
        f"of {SHEETS / 'results.yaml'}: result.total: '12' is not of type 'integer'; return a "
        "value that matches result.schema, or change the schema"
    )
    with pytest.raises(AssertionError, match=r"to be done, it is dead"):
        kit.assert_result(job)


def test_a_sensitive_field_is_never_quoted_in_the_refusal(kit: VirtualQueue) -> None:
    job = kit.enqueue("quote", {"value": {"total": 1, "card": 4111111111111111}})
    kit.drain()
    message = kit.attempts(job.job_id)[0].error.message
    assert 'result.card: breaks `type: "string"` (a sensitive value: it is not shown)' in message
    assert "4111" not in message


def test_a_value_too_big_fails_the_attempt(kit: VirtualQueue) -> None:
    job = kit.enqueue("quote", {"value": {"total": 1, "pad": "x" * 200}})
    kit.drain()
    kit.assert_state(job.job_id, "dead")
    first = kit.attempts(job.job_id)[0].error.message
    assert first.startswith(f"job {job.job_id} (quote) attempt 1: return value refused, it is ")
    assert "bytes as JSON, more than the 200 allowed by result.max_bytes of" in first
    assert first.endswith("store the bulk elsewhere and return its id, or raise result.max_bytes")


def test_a_refusal_listed_in_errors_fatal_buries_the_job_at_once(kit: VirtualQueue) -> None:
    job = kit.enqueue("strict_quote", {"value": [1, 2]})
    kit.drain()
    kit.assert_state(job.job_id, "dead")
    [attempt] = kit.attempts(job.job_id)
    assert (attempt.outcome, attempt.error.type) == ("dead", "jobdef.ResultRefused")
    assert kit.get(job.job_id).last_error.message.startswith(
        f"job {job.job_id} (strict_quote) attempt 1: return value refused, it breaks "
    )


def test_store_false_keeps_nothing_and_assert_result_says_so(kit: VirtualQueue) -> None:
    job = kit.enqueue("fire", {"value": {"anything": {1, 2}.__len__()}})
    kit.drain()
    assert kit.assert_state(job.job_id, "done").result is None
    with pytest.raises(AssertionError, match=r"its sheet says result.store: false"):
        kit.assert_result(job)


def test_result_retention_clears_the_result_on_the_virtual_clock(kit: VirtualQueue) -> None:
    job = kit.enqueue("quote", {"value": {"total": 3}})
    kit.drain()
    kit.advance("1h")  # kept for an hour: cleared once it is older than that
    assert kit.assert_result(job) == {"total": 3}
    kit.advance("1s")
    record = kit.assert_state(job.job_id, "done")  # the row stays: retention.done is 30d
    assert record.result is None
    with pytest.raises(AssertionError, match=r"result.retention is 3600s, so it was cleared"):
        kit.assert_result(job)


def test_assert_result_shows_both_values_when_they_differ(kit: VirtualQueue) -> None:
    job = kit.enqueue("quote", {"value": {"total": 3}})
    kit.drain()
    with pytest.raises(AssertionError) as caught:
        kit.assert_result(job, {"total": 4})
    assert str(caught.value) == (
        f"job #{job.job_id} (quote) returned a different result\n"
        '  stored:   {"total": 3}\n  expected: {"total": 4}'
    )
