"""What the job page says of a done job's result, as the sheet's ``result:`` has it kept.

The value (secrets masked as args are, :func:`jobdef.redact.shown_result`), its size
as stored (bytes of compact UTF-8 JSON, what ``result.max_bytes`` bounds), and when
``result.retention`` deletes it; or why there is none: the sheet does not store
results (``result.store: false``), the value was deleted when its retention passed,
or the handler returned nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from jobdef.backends.records import JobRecord
from jobdef.policy.durations import format_duration
from jobdef.policy.model import JobPolicy
from jobdef.redact import shown_result


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def stored_size(value: Any) -> int:
    """The size of ``value`` as the worker stores it: compact JSON, UTF-8 bytes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8"))


def result_facts(
    record: JobRecord, policy: JobPolicy | None, now: float, shown: Callable[[str], str]
) -> dict[str, Any] | None:
    """The job page's result block of a done job (None for a job in another state).

    ``shown`` masks and cuts the value's text as the page does every long text. Without a sheet
    the value is shown as it is stored, with no expiry to say.
    """
    if record.state != "done":
        return None
    if policy is not None and not policy.result.store:
        return {"stored": False, "why": "not stored (result.store: false)"}
    retention = policy.result.retention if policy is not None else None
    ends = None
    if retention is not None and record.finished_at is not None:
        ends = record.finished_at + retention
    if record.result is None:
        if ends is not None and ends <= now:
            why = f"deleted {_when(ends)}, {format_duration(retention or 0)} after the job ended"
            return {"stored": False, "why": f"{why} (result.retention)"}
        return {"stored": False, "why": "none stored: the handler returned nothing"}
    if ends is not None:
        expires = f"expires {_when(ends)} (result.retention: {format_duration(retention or 0)})"
    elif policy is not None:
        expires = "kept as long as the job (no retention.done: forever)"
    else:
        expires = "no sheet defines this job: its retention is unknown here"
    value = json.dumps(shown_result(policy, record.result), ensure_ascii=False, indent=2)
    return {
        "stored": True,
        "value": shown(value),
        "size": stored_size(record.result),
        "expires": expires,
    }
