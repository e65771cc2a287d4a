"""drain() stores what a handler returns as the job's result, held to its sheet's
``result:`` as the worker holds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.policy.values import DEFAULT_RESULT_BYTES

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


def test_a_result_too_large_fails_each_attempt_and_the_sheet_retries_it(jobdef_queue, monkeypatch):
    monkeypatch.setattr(
        "jobdef.examples.mail.send_reservation_mail",
        lambda ctx, reservation_id: "x" * DEFAULT_RESULT_BYTES,
    )
    job = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 4})
    jobdef_queue.drain()
    record = jobdef_queue.assert_state(job.job_id, "dead")  # errors.default: retry, 5 attempts
    assert record.result is None
    attempts = jobdef_queue.attempts(job.job_id)
    assert [a.outcome for a in attempts] == ["retry"] * 4 + ["dead"]
    assert {a.error.type for a in attempts} == {"jobdef.ResultRefused"}
    assert attempts[0].error.message.startswith(
        f"job {job.job_id} (send_reservation_mail) attempt 1: return value refused, it is "
        f"{DEFAULT_RESULT_BYTES + 2} bytes as JSON, more than the {DEFAULT_RESULT_BYTES} "
        "allowed by result.max_bytes"
    )


def test_every_enqueue_returns_a_receipt_and_status_reads_the_job_by_it(jobdef_queue):
    from jobdef import Receipt

    first = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 7})
    again = jobdef_queue.enqueue("send_reservation_mail", {"reservation_id": 7})
    many = jobdef_queue.enqueue_many(
        "send_reservation_mail", [{"reservation_id": 8}, {"reservation_id": 9}]
    )
    assert all(isinstance(r, Receipt) for r in (first, again, *many))
    assert again == Receipt(first.job_id, first.token, created=False)
    assert len({first.token, *(r.token for r in many)}) == 3
    assert jobdef_queue.status(first.token).state == "accepted"
    jobdef_queue.drain()
    done = jobdef_queue.status(first)
    assert (done.state, done.attempts, done.job_id) == ("done", 1, first.job_id)
    assert jobdef_queue.status("A" * 23) is None
