"""Rows to records and values to columns, for both engines: one mapping of the jobs,
attempts and outbox tables.

The two engines store the same columns. A JSON column (``args``, ``progress``,
``result``, ``last_error``/``error``, ``payload``) is written as the text of
:func:`dump_json` by both; they differ only in how it comes back from the
driver: PostgreSQL's ``jsonb`` arrives decoded, SQLite's ``TEXT`` as a string.
Each mapper takes the engine's ``decode`` for those columns.

Errors are stored the same way in both engines and both tables: one JSON object
``{"type", "message", "traceback"}`` (:func:`error_text`).
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from operator import attrgetter, itemgetter
from typing import Any, Protocol

from jobdef.backends.records import (
    AttemptRecord,
    ErrorInfo,
    JobRecord,
    Lease,
    NewJob,
    Notification,
    OutboxRecord,
    RetentionRule,
    State,
)
from jobdef.policy.values import thaw

Decode = Callable[[Any], Any]


class Row(Protocol):
    """A database row read by column name (a ``dict`` or a ``sqlite3.Row``)."""

    def __getitem__(self, key: str, /) -> Any: ...


def decoded(value: Any) -> Any:
    """The decode of a driver that returns JSON columns already decoded (psycopg)."""
    return value


def json_text(value: Any) -> Any:
    """The decode of JSON stored as text (SQLite); ``NULL`` stays ``None``."""
    return None if value is None else json_value(value)


_RAW_DECODE = json.JSONDecoder().raw_decode


def json_value(text: str) -> Any:
    """``json.loads(text)``, at a third to a half of its cost, for the text the engines keep:
    :func:`dump_json`'s, and PostgreSQL's ``jsonb`` output, have nothing before or after
    the value, so it is decoded straight from its first character, without the checks
    ``json.loads`` makes first (a BOM, an encoding, whitespace around). A claim decodes
    the args of every job it leases. Any other text (or bytes) is left to ``json.loads``:
    the same values, the same errors."""
    try:
        value, end = _RAW_DECODE(text)
        if end == len(text):
            return value
    except (ValueError, TypeError):  # not such text: json.loads says what it is
        pass
    return json.loads(text)


def dump_json(value: Any) -> str:
    """The text both engines store in a JSON column: compact, other than ASCII kept as
    it is (not ``\\u`` escapes, so the SQLite file reads as PostgreSQL's ``jsonb``
    prints), a sheet's frozen mappings and tuples as objects and arrays. A value JSON
    has no form for (a payload's ``datetime``) is stored as its ``str``."""
    return json.dumps(thaw(value), separators=(",", ":"), ensure_ascii=False, default=str)


def receipt_token() -> str:
    """A new job's receipt token: the time of its making in milliseconds as 12 hex
    digits, then 17 random bytes as 23 url-safe characters (136 random bits), drawn by
    the enqueuer (both engines' tokens are alike, and no database extension is needed).

    The time comes first so that the tokens of one burst of enqueues sit side by side
    in the unique index, as the job ids do: an index of purely random keys takes each
    insert to another page of it (a quarter of SQLite's bulk enqueue rate), while the
    holder of a receipt learns nothing from the time it already knows. A hex digit
    never starts an option of a command line (``jobdef wait TOKEN``).
    """
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_urlsafe(17)}"


def receipt_tokens(count: int) -> list[str]:
    """``count`` receipt tokens, as :func:`receipt_token` draws them, for a batch: one
    draw of random bytes and one base64 encode for all. Each token's 23 characters are
    the first of the 24 that its own 18 bytes encode to (138 random bits, of which 136
    are kept), so the one encode splits at token boundaries."""
    stamp = f"{time.time_ns() // 1_000_000:012x}"
    text = base64.urlsafe_b64encode(secrets.token_bytes(18 * count)).decode("ascii")
    return [stamp + text[at : at + 23] for at in range(0, 24 * count, 24)]


def args_json_of(job: NewJob) -> str:
    """The JSON text a new job's args are stored as (encoded once, by the queue, when
    it could)."""
    return dump_json(job.args) if job.args_json is None else job.args_json


# What a receipt token may look like: url-safe base64 text (the tokens jobdef draws
# have 35 characters; earlier ones 23; a shorter one never was drawn).
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")


def looks_like_token(text: str) -> bool:
    """Whether ``text`` could be a receipt token: anything else is unknown without a
    query (a stray id, a value with characters no token has)."""
    return isinstance(text, str) and _TOKEN.fullmatch(text) is not None


def same_token(stored: str | None, given: str) -> bool:
    """Whether ``given`` is the receipt token ``stored`` (None: the row has none),
    compared in constant time: the index found the row, and this says it is the one."""
    return stored is not None and hmac.compare_digest(stored.encode(), given.encode())


def error_json(error: ErrorInfo) -> dict[str, str]:
    """An error as both engines store it, in the jobs and in the attempts table."""
    return {"type": error.type, "message": error.message, "traceback": error.traceback}


def error_text(error: ErrorInfo | None) -> str | None:
    """:func:`error_json` as the text of its column (``None``: no error)."""
    return None if error is None else dump_json(error_json(error))


def outbox_columns(note: Notification) -> dict[str, Any]:
    """The columns of one outbox message, as both engines store them."""
    return {
        "message_id": note.message_id,
        "channel": note.channel,
        "event": note.event,
        "job": note.job,
        "payload": dump_json(note.payload),
    }


def error_info(value: Any) -> ErrorInfo | None:
    """The error a decoded ``error_json`` column holds (``None``: no error)."""
    if value is None:
        return None
    return ErrorInfo(value["type"], value["message"] or "", value.get("traceback") or "")


def job_record(row: Row, decode: Decode = decoded) -> JobRecord:
    """One row of the jobs table."""
    values = [row[column] for column in _REQUIRED]
    values += [_optional(row, column) for column in _COLUMNS[len(_REQUIRED) :]]
    return _job_from(values, decode)


class PositionalRow(Protocol):
    """A row that reads by position (a tuple)."""

    def __getitem__(self, index: int, /) -> Any: ...


class IndexedRow(PositionalRow, Protocol):
    """A row that also reads by position and names its columns (``sqlite3.Row``)."""

    def keys(self) -> list[str]: ...


def job_records(rows: Sequence[IndexedRow], decode: Decode = decoded) -> list[JobRecord]:
    """The rows of one query of the jobs table, as :func:`job_record` reads each, with
    the columns located once for all of them: a claim maps a whole batch, and reading a
    ``sqlite3.Row`` by name costs a scan of its column names per column."""
    if not rows:
        return []
    return job_records_by_position(rows[0].keys(), rows, decode)


def job_records_by_position(
    names: Sequence[str], rows: Iterable[PositionalRow], decode: Decode = decoded
) -> list[JobRecord]:
    """Rows read by position, ``names`` their columns (a cursor's description): what
    :func:`job_records` does, for rows that do not name their columns (tuples)."""
    where = {name: index for index, name in enumerate(names)}
    for column in _REQUIRED:
        if column not in where:
            raise KeyError(column)
    pick = _picker([where.get(column) for column in _COLUMNS])
    return [_job_from(list(pick(row)), decode) for row in rows]


def _picker(picks: list[int | None]) -> Callable[[PositionalRow], Sequence[Any]]:
    """What reads a row's values at ``picks`` (None: a column the row lacks, read as None):
    one C call per row when it has them all."""
    if None not in picks:
        return itemgetter(*picks)
    return lambda row: [None if at is None else row[at] for at in picks]


# The record's fields in order: the columns every query of the jobs table selects, then
# those a store older than the query may lack (read as None).
_COLUMNS = tuple(field.name for field in fields(JobRecord))
_REQUIRED = _COLUMNS[: _COLUMNS.index("trace_context")]
_JSON_AT = tuple(_COLUMNS.index(name) for name in ("args", "last_error", "progress", "result"))
_LAST_ERROR = _COLUMNS.index("last_error")


def _job_from(values: list[Any], decode: Decode) -> JobRecord:
    """The record of a row's values in :data:`_COLUMNS` order, its JSON columns decoded."""
    for at in _JSON_AT:  # mostly NULL but args: not decoded
        if values[at] is not None:
            values[at] = decode(values[at])
    if values[_LAST_ERROR] is not None:
        values[_LAST_ERROR] = error_info(values[_LAST_ERROR])
    return JobRecord(*values)


def _optional(row: Row, column: str) -> Any:
    """A column a query may not select (a store older than it): ``None`` then."""
    try:
        return row[column]
    except (KeyError, IndexError):
        return None


def in_claim_order(records: Iterable[JobRecord]) -> list[JobRecord]:
    """Claimed jobs in claim order: priority desc, run_after, id (RETURNING has no order).

    Two stable sorts, the last one first, each on keys read in C: a key built by a
    function of Python would cost a call per claimed job."""
    ordered = sorted(records, key=_RUN_AFTER_ID)
    ordered.sort(key=_PRIORITY, reverse=True)  # stable: equal priorities keep that order
    return ordered


_RUN_AFTER_ID = attrgetter("run_after", "id")
_PRIORITY = attrgetter("priority")


def attempt_record(row: Row, decode: Decode = decoded) -> AttemptRecord:
    """One row of the attempts table: a finished attempt."""
    return AttemptRecord(
        job_id=row["job_id"],
        attempt=row["attempt"],
        worker_id=row["worker_id"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        outcome=row["outcome"],
        error=error_info(decode(row["error"])),
    )


def attempt_history(
    rows: Sequence[Row], job: Row | None, decode: Decode = decoded
) -> list[AttemptRecord]:
    """A job's attempts: the finished ones from the attempts table, then the running
    one, which has no row there until it ends, from the job row."""
    history = [attempt_record(row, decode) for row in rows]
    if job is not None and job["state"] == "running":
        history.append(
            AttemptRecord(
                job_id=job["id"],
                attempt=job["attempt"],
                worker_id=job["worker_id"],
                started_at=job["started_at"],
                finished_at=None,
                outcome=None,
            )
        )
    return history


def lease_params(lease: Lease) -> dict[str, Any]:
    """The fence of every transition: job id, attempt number, worker id."""
    return {"job_id": lease.job_id, "attempt": lease.attempt, "worker_id": lease.worker_id}


def retention_periods(rule: RetentionRule) -> list[tuple[tuple[State, ...], float]]:
    """The finished states ``rule`` prunes, with how long each is kept (seconds after
    it finished); a period the rule leaves unset keeps those rows for ever."""
    periods: list[tuple[tuple[State, ...], float | None]] = [
        (("done", "cancelled", "resolved"), rule.done),
        (("dead",), rule.dead),
    ]
    return [(states, keep) for states, keep in periods if keep is not None]


def outbox_record(row: Row, decode: Decode = decoded) -> OutboxRecord:
    """One row of the outbox."""
    return OutboxRecord(
        id=row["id"],
        notification=Notification(
            channel=row["channel"],
            event=row["event"],
            job=row["job"],
            payload=decode(row["payload"]),
            message_id=row["message_id"],
        ),
        attempts=row["attempts"],
        next_at=row["next_at"],
        created_at=row["created_at"],
        delivered_at=row["delivered_at"],
        last_error=row["last_error"],
    )
