"""What a transition puts in the outbox: the payload a person acts on, and a stable id."""

from __future__ import annotations

from pathlib import Path

from jobdef.backends.records import ErrorInfo, JobRecord
from jobdef.notify.events import notifications_for
from jobdef.sheets.pipeline import load_registry

AT = 1_767_225_600.5


def record(attempt: int = 5, job_id: int = 42) -> JobRecord:
    return JobRecord(
        id=job_id,
        job="send_reservation_mail",
        queue="mail",
        priority=0,
        args={"reservation_id": 7, "note": "not a key arg"},
        state="running",
        attempt=attempt,
        max_attempts=5,
        idempotency_key="7:confirm-mail",
        run_after=AT,
        created_at=AT,
        updated_at=AT,
    )


def test_dead_event_carries_what_a_person_needs_to_act(example_sheets: Path) -> None:
    policy = load_registry([example_sheets]).job("send_reservation_mail")
    error = ErrorInfo("smtplib.SMTPServerDisconnected", "Connection unexpectedly closed", "tb")
    [note] = notifications_for(policy, "dead", record(), error, AT)

    assert note.channel == "ops-chat"
    assert note.event == "dead"
    assert note.payload == {
        "event": "dead",
        "job": "send_reservation_mail",
        "title": "予約確定メール送信",
        "job_id": 42,
        "queue": "mail",
        "key_args": {"reservation_id": 7},
        "attempts_used": 5,
        "max_attempts": 5,
        "error_type": "smtplib.SMTPServerDisconnected",
        "error_message": "Connection unexpectedly closed",
        "at": AT,
        "at_iso": "2026-01-01T00:00:00Z",
        "rerun": "jobdef requeue --job send_reservation_mail --state dead",
        "requeue_command": "jobdef requeue 42",
        "owner": "reservations-team",
    }


def test_events_the_sheet_does_not_list_produce_nothing(example_sheets: Path) -> None:
    policy = load_registry([example_sheets]).job("send_reservation_mail")
    assert notifications_for(policy, "retry", record(), None, AT) == []
    assert notifications_for(policy, "done", record(), None, AT) == []


def test_message_id_is_the_same_for_the_same_transition_and_new_after_a_requeue(
    example_sheets: Path,
) -> None:
    policy = load_registry([example_sheets]).job("send_reservation_mail")
    first = notifications_for(policy, "dead", record(), None, AT)[0].message_id
    assert notifications_for(policy, "dead", record(), None, AT)[0].message_id == first
    # Requeued (attempts back to 0), it dies again at attempt 5: a new event, a new id.
    assert notifications_for(policy, "dead", record(), None, AT + 3600)[0].message_id != first


def test_a_long_error_message_is_cut(example_sheets: Path) -> None:
    policy = load_registry([example_sheets]).job("send_reservation_mail")
    error = ErrorInfo("ValueError", "x" * 10_000)
    [note] = notifications_for(policy, "dead", record(), error, AT)
    assert len(note.payload["error_message"]) == 2001
