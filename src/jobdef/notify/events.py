"""The notifications a job transition produces, per the sheet's ``notify`` block.

The runtime calls :func:`notifications_for` while moving a job and hands the
result to the backend verb, which writes them to the outbox in the same
transaction as the move.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jobdef.backends.base import ErrorInfo, JobRecord, Notification
from jobdef.policy import JobPolicy

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def key_args(policy: JobPolicy, args: Mapping[str, Any]) -> dict[str, Any]:
    """The args a message shows: ``notify.key_args``, else those the idempotency recipe uses."""
    names = list(policy.notify.key_args) or _PLACEHOLDER.findall(policy.idempotency.key or "")
    return {name: args[name] for name in names if name in args}


def notifications_for(
    policy: JobPolicy,
    event: str,
    record: JobRecord,
    error: ErrorInfo | None,
    at: float,
) -> list[Notification]:
    """The outbox messages for ``event`` of ``record``; empty when the sheet does not ask."""
    if policy.notify.channel is None or event not in policy.notify.events:
        return []
    payload: dict[str, Any] = {
        "event": event,
        "job": policy.name,
        "title": policy.title,
        "job_id": record.id,
        "key_args": key_args(policy, record.args),
        "attempts_used": record.attempt,
        "max_attempts": record.max_attempts,
        "error_type": error.type if error else None,
        "error_message": error.message if error else None,
        "at": at,
        "rerun": policy.rerun,
    }
    # Stable per (job id, attempt, event): a resend after a crash carries the same id.
    message_id = f"{policy.name}:{record.id}:{record.attempt}:{event}"
    return [
        Notification(
            channel=policy.notify.channel,
            event=event,
            job=policy.name,
            payload=payload,
            message_id=message_id,
        )
    ]
