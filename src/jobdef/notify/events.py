"""The notifications a job transition produces, per the sheet's ``notify`` block.

The runtime calls :func:`notifications_for` while moving a job and hands the
result to the backend verb, which writes them to the outbox in the same
transaction as the move. The payload is plain JSON data: everything a person
needs to act on the event without opening the database (job and title, id, key
args, attempts used, the last error, when, and the exact re-run command).

A ``done`` event also carries what the application that enqueued the job needs to
tell its own user: the job's ``receipt`` token (what ``enqueue`` returned, what the
status endpoint answers to) and, when the sheet's ``result.notify`` names fields,
``result``: those top-level fields of the stored value, shown as args are shown
(:func:`jobdef.redact.shown_fields`), and nothing else of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from jobdef.backends.records import ErrorInfo, JobRecord, Notification
from jobdef.policy.keys import key_placeholders
from jobdef.policy.model import JobPolicy
from jobdef.redact import shown_args, shown_fields

# The longest error message a notification carries; tracebacks stay in the attempts table.
MAX_ERROR_CHARS = 2000


def key_args(policy: JobPolicy, args: Mapping[str, Any]) -> dict[str, Any]:
    """The args a message shows: ``notify.key_args``, else those the idempotency recipe uses;
    as every display shows them (:func:`jobdef.redact.shown_args`: a sensitive one is
    ``***``). The outbox stores the payload as shown: no channel needs the values."""
    names = list(policy.notify.key_args) or key_placeholders(policy.idempotency.key or "")
    return shown_args(policy, {name: args[name] for name in names if name in args})


def iso_time(at: float) -> str:
    """``at`` (epoch seconds) as an ISO 8601 UTC timestamp with second precision."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def requeue_command(job_id: int) -> str:
    """The command that queues exactly this job again."""
    return f"jobdef requeue {job_id}"


def message_id_for(job: str, job_id: int, attempt: int, event: str, at: float) -> str:
    """A message id that names the transition it reports.

    The id is computed once, when the outbox row is written in the transition's
    transaction, and stored with the row: every resend of that row carries it.
    The transition time (milliseconds) keeps it distinct after a requeue, which
    sets the attempt count back to 0, so a second death of the same job is not
    mistaken for a copy of the first.
    """
    return f"{job}:{job_id}:{attempt}:{event}:{round(at * 1000)}"


def notified_result(policy: JobPolicy, result: str | None) -> dict[str, Any]:
    """The fields of ``result`` (the stored value's JSON text, None when nothing was
    stored) that the sheet's ``result.notify`` names, as a notification shows them."""
    if not policy.result.notify or result is None:
        return {}
    return shown_fields(policy, json.loads(result), policy.result.notify)


def payload_for(
    policy: JobPolicy,
    event: str,
    record: JobRecord,
    error: ErrorInfo | None,
    at: float,
    *,
    result: str | None = None,
) -> dict[str, Any]:
    """The JSON payload of one event (what every channel renders); ``result`` is the
    JSON text stored as a done job's value."""
    message = error.message if error else None
    if message is not None and len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + "…"
    payload: dict[str, Any] = {
        "event": event,
        "job": policy.name,
        "title": policy.title,
        "job_id": record.id,
        "queue": record.queue,
        "key_args": key_args(policy, record.args),
        "attempts_used": record.attempt,
        "max_attempts": record.max_attempts,
        "error_type": error.type if error else None,
        "error_message": message,
        "at": at,
        "at_iso": iso_time(at),
        "rerun": policy.rerun.replace("{job_id}", str(record.id)),
        "requeue_command": requeue_command(record.id),
        "owner": policy.owner,
    }
    if event == "done":
        payload["receipt"] = record.receipt
        if policy.result.store and policy.result.notify:
            payload["result"] = notified_result(policy, result)
    return payload


def notifications_for(
    policy: JobPolicy,
    event: str,
    record: JobRecord,
    error: ErrorInfo | None,
    at: float,
    *,
    result: str | None = None,
) -> list[Notification]:
    """The outbox messages for ``event`` of ``record``; empty when the sheet does not ask.
    ``result``: the JSON text stored with a done job (its ``result.notify`` fields travel)."""
    if policy.notify.channel is None or event not in policy.notify.events:
        return []
    message_id = message_id_for(policy.name, record.id, record.attempt, event, at)
    return [
        Notification(
            channel=policy.notify.channel,
            event=event,
            job=policy.name,
            payload=payload_for(policy, event, record, error, at, result=result),
            message_id=message_id,
        )
    ]
