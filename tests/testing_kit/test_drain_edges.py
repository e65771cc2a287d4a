"""drain() with handlers that behave as real ones sometimes do, and the outbox sent on request."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from jobdef.backends.records import NewJob

EXAMPLES = Path(__file__).resolve().parents[2] / "jobdefs"

pytestmark = [
    pytest.mark.jobdef(sheets=str(EXAMPLES), start=1_800_000_000),
    pytest.mark.usefixtures("examples_dir"),
]


def test_a_coroutine_handler_is_awaited(jobdef_queue, monkeypatch):
    seen = []

    async def send(ctx, reservation_id):
        seen.append((ctx.attempt, reservation_id))
        if ctx.attempt == 1:
            raise ConnectionError("not yet")

    monkeypatch.setattr("jobdef.examples.mail.send_reservation_mail", send)
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 4})
    assert [a.outcome for a in jobdef_queue.drain()] == ["retry", "done"]
    assert seen == [(1, 4), (2, 4)]
    jobdef_queue.assert_state(job.id, "done")


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt()])
def test_a_handler_raising_a_base_exception_fails_its_attempt_not_the_test(
    jobdef_queue, monkeypatch, raised
):
    def exits(ctx, reservation_id):
        raise raised

    monkeypatch.setattr("jobdef.examples.mail.send_reservation_mail", exits)
    jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 4})
    first = jobdef_queue.drain(until="0s")[0]
    assert first.outcome == "retry"  # errors.default is retry in this sheet
    assert first.error.type == type(raised).__name__


def test_progress_that_is_not_json_is_dropped_with_a_warning(jobdef_queue, monkeypatch, caplog):
    def reports(ctx, export_id, month):
        ctx.heartbeat({"when": object()})

    monkeypatch.setattr("jobdef.examples.exports.export_csv", reports)
    job = jobdef_queue.enqueue("export_csv", {"export_id": "1" * 36, "month": "2026-01"})
    with caplog.at_level(logging.WARNING, "jobdef.testing"):
        jobdef_queue.drain()
    assert jobdef_queue.assert_state(job.id, "done").progress is None
    assert "progress dropped" in caplog.text


def test_a_stored_job_no_sheet_defines_is_buried_as_the_worker_does(jobdef_queue):
    [stored] = jobdef_queue.backend.enqueue([NewJob(job="gone_job", args={}, queue="default")])
    [attempt] = jobdef_queue.drain()
    assert attempt.error.type == "jobdef.errors.UnknownJobError"
    assert "no sheet of this worker defines job 'gone_job'" in attempt.error.message
    assert jobdef_queue.get(stored.id).state == "dead"


def test_send_notifications_delivers_through_the_sheets_channels(jobdef_queue, caplog):
    jobdef_queue.enqueue("resize_image", {"image_id": "missing", "width": 64})  # fatal
    jobdef_queue.drain()
    [note] = jobdef_queue.outbox
    assert (note.channel, note.event) == ("ops-log", "dead")
    with caplog.at_level(logging.INFO):
        report = jobdef_queue.send_notifications(environ={})
    assert report.delivered == 1
    assert jobdef_queue.outbox == []
    assert "resize_image" in caplog.text


def test_a_handler_stuck_in_a_blocking_call_is_abandoned_at_its_timeout(jobdef_queue, monkeypatch):
    """The thread cannot be killed: it gets the stop request when the blocking call returns,
    stops there, and nothing it would have done after is recorded or escapes its thread."""
    import threading
    import time

    jobdef_queue.timeout_scale = 0.05 / 20  # resize_image's 20s: 50 ms
    after_sleep = threading.Event()

    def stuck(ctx, image_id, width):
        time.sleep(0.3)  # one C call: the stop request waits for it to return
        after_sleep.set()

    monkeypatch.setattr("jobdef.examples.images.resize_image", stuck)
    job = jobdef_queue.enqueue("resize_image", {"image_id": "a", "width": 64})
    [attempt] = jobdef_queue.drain()
    assert attempt.outcome == "timeout"
    deadline = time.monotonic() + 5
    while any(t.name.startswith("jobdef-attempt-") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the abandoned handler thread did not stop"
        time.sleep(0.02)
    assert not after_sleep.is_set()  # stopped right after the blocking call
    assert jobdef_queue.get(job.id).state == "dead"
