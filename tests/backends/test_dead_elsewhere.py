"""Jobs that died in another runtime, stored by jobdef.backends.elsewhere, on both engines:
read as any dead job, stored once however often reported, left alone by jobdef's requeue."""

from __future__ import annotations

from jobdef.backends.elsewhere import (
    AttemptElsewhere,
    DeadElsewhere,
    elsewhere,
    record_dead_elsewhere,
)
from jobdef.backends.protocol import Backend
from jobdef.backends.records import ErrorInfo, JobRecord, Notification
from support import ManualClock

DEAD = DeadElsewhere(
    runtime="celery",
    task_id="7a9c0d2e-task",
    job="send_reservation_mail",
    queue="mail",
    args={"reservation_id": 42},
    max_attempts=2,
    created_at=1_699_999_990.0,
    error=ErrorInfo("ConnectionError", "the server is down; dead: attempts used up (2 of 2)"),
    attempts=[
        AttemptElsewhere(1, "celery@host", 1_699_999_990.0, 1_699_999_991.0, "retry"),
        AttemptElsewhere(
            2, "celery@host", 1_699_999_995.0, 1_699_999_996.0, "dead", ErrorInfo("E", "m")
        ),
    ],
    idempotency_key="42:mail",
)


def _note(record: JobRecord) -> list[Notification]:
    return [
        Notification(
            channel="ops",
            event="dead",
            job=record.job,
            payload={"job_id": record.id},
            message_id=f"{record.job}:{record.id}:{record.attempt}:dead",
        )
    ]


def test_a_dead_job_of_another_runtime_is_a_dead_row_with_its_attempts_and_one_message(
    backend: Backend, clock: ManualClock
) -> None:
    record = record_dead_elsewhere(backend, DEAD, _note)
    again = record_dead_elsewhere(backend, DEAD, _note)  # a redelivered report

    assert again.id == record.id
    [listed] = backend.list_jobs(state="dead")
    assert listed.id == record.id
    assert (listed.job, listed.queue, dict(listed.args)) == (
        DEAD.job,
        "mail",
        {"reservation_id": 42},
    )
    assert (listed.attempt, listed.max_attempts, listed.idempotency_key) == (2, 2, "42:mail")
    assert listed.last_error is not None
    assert "attempts used up" in listed.last_error.message
    assert elsewhere(listed) == ("celery", "7a9c0d2e-task")
    assert [(a.attempt, a.outcome) for a in backend.attempts(record.id)] == [
        (1, "retry"),
        (2, "dead"),
    ]
    assert [o.notification.event for o in backend.outbox_pending()] == ["dead"]


def test_jobdef_requeue_leaves_another_runtimes_dead_job_alone(backend: Backend) -> None:
    record = record_dead_elsewhere(backend, DEAD, _note)
    assert backend.requeue([record.id]) == 0
    assert backend.requeue(job=DEAD.job) == 0
    got = backend.get(record.id)
    assert got is not None
    assert got.state == "dead"
    assert backend.resolve(record.id, "handled by hand")
