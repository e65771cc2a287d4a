"""drain() stores what a handler returns as the job's result, as the worker does."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from jobdef.runtime.payloads import MAX_RESULT_BYTES

EXAMPLES = Path(__file__).resolve().parents[2] / "jobdefs"

pytestmark = [
    pytest.mark.jobdef(sheets=str(EXAMPLES), start=1_800_000_000),
    pytest.mark.usefixtures("examples_dir"),
]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_returned_value_is_the_jobs_result(jobdef_queue, monkeypatch, asynchronous):
    def send(ctx, reservation_id):
        return {"sent_to": reservation_id, "ids": (1, 2)}

    async def send_async(ctx, reservation_id):
        return send(ctx, reservation_id)

    handler = send_async if asynchronous else send
    monkeypatch.setattr("jobdef.examples.mail.send_reservation_mail", handler)
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 4})
    jobdef_queue.drain()
    assert jobdef_queue.assert_state(job.id, "done").result == {"sent_to": 4, "ids": [1, 2]}


def test_a_result_too_large_is_dropped_with_a_warning_and_the_job_is_done(
    jobdef_queue, monkeypatch, caplog
):
    monkeypatch.setattr(
        "jobdef.examples.mail.send_reservation_mail",
        lambda ctx, reservation_id: "x" * MAX_RESULT_BYTES,
    )
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 4})
    with caplog.at_level(logging.WARNING, "jobdef.worker"):
        jobdef_queue.drain()
    assert jobdef_queue.assert_state(job.id, "done").result is None
    [warning] = [r.getMessage() for r in caplog.records if "return value" in r.getMessage()]
    assert warning.startswith(f"job {job.id} (send_reservation_mail) attempt 1: return value not")
    assert f"more than the {MAX_RESULT_BYTES} allowed" in warning
