"""The failure messages of the kit's assertions: what was expected, what is there instead.

Each says what the test asked for, lists what the store holds instead (the
jobs, or the outbox), and ends with what to check; a listing is cut after
:data:`MAX_LISTED` entries, and args after :data:`MAX_ARGS_CHARS` characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from jobdef.backends.records import JobRecord, Notification
from jobdef.policy.model import JobPolicy
from jobdef.schedule.cron import CronSchedule
from jobdef.testing.attempt import Attempt

MAX_LISTED = 20
MAX_ARGS_CHARS = 200


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= MAX_ARGS_CHARS else text[: MAX_ARGS_CHARS - 1] + "…"


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")


def _job_line(record: JobRecord) -> str:
    return f"  #{record.id} {record.job} {_json(dict(record.args))} ({record.state})"


def listing(records: Sequence[JobRecord]) -> str:
    if not records:
        return "nothing was enqueued"
    lines = [_job_line(r) for r in records[:MAX_LISTED]]
    if len(records) > MAX_LISTED:
        lines.append(f"  ... and {len(records) - MAX_LISTED} more")
    noun = "job" if len(records) == 1 else "jobs"
    return f"enqueued instead ({len(records)} {noun}):\n" + "\n".join(lines)


def _wanted(job: str, args: Mapping[str, Any] | None, state: str | None) -> str:
    text = f"job {job!r}"
    if args is not None:
        text += f" with args {_json(dict(args))}"
    if state is not None:
        text += f" in state {state}"
    return text


def not_enqueued(
    job: str,
    args: Mapping[str, Any] | None,
    *,
    state: str | None,
    count: int | None,
    found: Sequence[JobRecord],
    everything: Sequence[JobRecord],
) -> str:
    wanted = _wanted(job, args, state)
    if count is not None and found:
        head = f"expected {count} of {wanted} to be enqueued, found {len(found)}:\n"
        return head + "\n".join(_job_line(r) for r in found[:MAX_LISTED])
    head = f"expected {wanted} to be enqueued, but no such job was stored; "
    same_job = [r for r in everything if r.job == job]
    hint = (
        "the args differ: compare them with the call your code makes"
        if same_job
        else "check that the code under test enqueues on this queue (pass it jobdef_queue)"
    )
    return head + listing(same_job or everything) + "\n" + hint


def was_enqueued(job: str, args: Mapping[str, Any] | None, found: Sequence[JobRecord]) -> str:
    noun = "job was" if len(found) == 1 else "jobs were"
    lines = "\n".join(_job_line(r) for r in found[:MAX_LISTED])
    return (
        f"expected no {_wanted(job, args, None)} to be enqueued, but {len(found)} {noun}:\n{lines}"
    )


def _note_line(note: Notification) -> str:
    return f"  {note.channel} {note.event} {note.job} {_json(dict(note.payload))}"


def outbox_listing(outbox: Sequence[Notification]) -> str:
    if not outbox:
        return "the outbox is empty"
    lines = [_note_line(n) for n in outbox[:MAX_LISTED]]
    if len(outbox) > MAX_LISTED:
        lines.append(f"  ... and {len(outbox) - MAX_LISTED} more")
    return f"the outbox holds ({len(outbox)}):\n" + "\n".join(lines)


def not_notified(
    channel: str,
    event: str,
    job: str | None,
    *,
    count: int | None,
    found: Sequence[Notification],
    outbox: Sequence[Notification],
) -> str:
    wanted = f"{channel} {event}" + (f" for job {job!r}" if job else "")
    if count is not None and found:
        head = f"expected {count} notification(s) {wanted}, found {len(found)}:\n"
        return head + "\n".join(_note_line(n) for n in found)
    return (
        f"expected a notification {wanted}, but none was written; {outbox_listing(outbox)}\n"
        "a sheet notifies only the events in its notify.events, on its notify.channel"
    )


def was_notified(
    channel: str | None, event: str | None, job: str | None, found: Sequence[Notification]
) -> str:
    wanted = " ".join(part for part in (channel, event) if part) or "any"
    if job:
        wanted += f" for job {job!r}"
    lines = "\n".join(_note_line(n) for n in found[:MAX_LISTED])
    return f"expected no notification ({wanted}), found {len(found)}:\n{lines}"


def _attempt_line(attempt: Attempt) -> str:
    error = f" {attempt.error.type}: {attempt.error.message}" if attempt.error else ""
    return (
        f"  attempt {attempt.number} at +{attempt.offset:g}s ({_when(attempt.started_at)}): "
        f"{attempt.outcome}{error}"
    )


def wrong_state(record: JobRecord, state: str, attempts: Sequence[Attempt]) -> str:
    lines = [f"expected job #{record.id} ({record.job}) to be {state}, it is {record.state}"]
    if not attempts:
        lines.append("  it never ran: drain() runs what is due (it may be due later)")
    lines += [_attempt_line(a) for a in attempts]
    if record.last_error is not None and record.last_error.traceback:
        lines.append("the last error's traceback:")
        lines.append(record.last_error.traceback.rstrip())
    return "\n".join(lines)


def off_timeline(
    record: JobRecord,
    attempts: Sequence[Attempt],
    rows: Mapping[int, Mapping[str, Any]],
    outside: Sequence[Attempt],
) -> str:
    lines = [
        f"job #{record.id} ({record.job}): {len(outside)} attempt(s) started outside the "
        "window `jobdef explain` gives (seconds after the enqueue):"
    ]
    for attempt in attempts:
        row = rows.get(attempt.number)
        window = (
            f"[{row['earliest_start']:g}, {row['latest_start']:g}]"
            if row
            else "none: past max_attempts"
        )
        mark = "  <-- outside" if attempt in outside else ""
        lines.append(f"  attempt {attempt.number}: +{attempt.offset:g}s, window {window}{mark}")
    return "\n".join(lines)


def drain_limit(limit: int, ran: Sequence[Attempt]) -> str:
    jobs = sorted({a.job for a in ran[-50:]})
    return (
        f"drain() ran {limit} attempts and jobs are still due (lately: {', '.join(jobs)}); "
        "a handler may enqueue a job every time it runs; pass drain(until=...) or limit="
    )


def not_a_slot(
    policy: JobPolicy, moment: datetime, before: datetime | None, schedule: CronSchedule
) -> str:
    after = next(schedule.after(moment), None)
    near = [s.isoformat() for s in (before, after) if s is not None]
    return (
        f"{moment.isoformat()} is not a slot of {policy.name}'s schedule "
        f"{policy.schedule!r} ({policy.timezone}); the nearest slots are {' and '.join(near)}"
    )


def no_result(record: JobRecord, policy: JobPolicy | None, now: float) -> str:
    """Why a done job holds no result, as far as its sheet and its end tell."""
    head = f"expected job #{record.id} ({record.job}) to have a stored result, it has none"
    if policy is None:
        return f"{head}: no loaded sheet defines {record.job!r}"
    if not policy.result.store:
        return f"{head}: its sheet says result.store: false ({policy.file or 'its sheet'})"
    keep = policy.result.retention
    if keep is not None and record.finished_at is not None and now - record.finished_at > keep:
        ago = now - record.finished_at
        return (
            f"{head}: it ended {ago:g}s ago and result.retention is {keep:g}s, so it was "
            "cleared; look before advance() passes it"
        )
    return f"{head}: the handler returned None"


def other_result(record: JobRecord, expected: Any) -> str:
    shown = json.dumps(record.result, ensure_ascii=False, sort_keys=True, default=repr)
    wanted = json.dumps(expected, ensure_ascii=False, sort_keys=True, default=repr)
    return (
        f"job #{record.id} ({record.job}) returned a different result\n"
        f"  stored:   {shown}\n  expected: {wanted}"
    )
