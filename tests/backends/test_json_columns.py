"""Every JSON column holds the same text on both engines: what is not ASCII is stored as
it is, never as ``\\u`` escapes, and reads back as it was written."""

from __future__ import annotations

import json

from jobdef.backends.records import ErrorInfo, NewJob, Notification

TEXT = "Jürgen, 東京の予約 ✓ 🎉"
ERROR = ErrorInfo("ValueError", f"no room for {TEXT}", f"Traceback ...\nValueError: {TEXT}")


def _stored(store, column: str, table: str, where: str, *params: object) -> str:
    """The column's text as the store keeps it (SQLite: the TEXT; PostgreSQL: jsonb's)."""
    sql = f"SELECT CAST({column} AS TEXT) FROM {{prefix}}{table} WHERE {where}"
    [(text,)] = store.raw(sql, *params)
    assert isinstance(text, str)
    return text


def test_json_columns_keep_text_other_than_ascii_as_it_is(backend, store, worker, clock):
    args = {"name": TEXT, "rooms": [TEXT, 2], "nested": {TEXT: True}}
    [job] = backend.enqueue([NewJob("mail", args, "default", max_attempts=2)])
    first = worker.claim_one()
    assert backend.heartbeat(first.lease, 30.0, progress={"step": TEXT})
    progress = _stored(store, "progress", "jobs", "id = {p}", job.id)
    note = Notification("ops", "retry", "mail", {"text": TEXT}, "m-1")
    assert backend.retry(first.lease, ERROR, run_after=clock(), delay=0.0, notifications=[note])
    second = worker.claim_one()
    result = json.dumps({"text": TEXT}, ensure_ascii=False)
    assert backend.complete([second.lease], None, {job.id: result}) == [True]

    stored = {
        "args": _stored(store, "args", "jobs", "id = {p}", job.id),
        "progress": progress,
        "result": _stored(store, "result", "jobs", "id = {p}", job.id),
        "last_error": _stored(store, "last_error", "jobs", "id = {p}", job.id),
        "error": _stored(store, "error", "attempts", "job_id = {p} AND attempt = 1", job.id),
        "payload": _stored(store, "payload", "outbox", "message_id = {p}", "m-1"),
    }
    for column, text in stored.items():
        assert TEXT in text, f"{column} is stored as {text!r}"
        assert "\\u" not in text, f"{column} is stored with escapes: {text!r}"
    error = {"type": ERROR.type, "message": ERROR.message, "traceback": ERROR.traceback}
    assert {column: json.loads(text) for column, text in stored.items()} == {
        "args": args,
        "progress": {"step": TEXT},
        "result": {"text": TEXT},
        "last_error": error,
        "error": error,
        "payload": {"text": TEXT},
    }

    record = backend.get(job.id)
    assert record is not None
    assert (record.args, record.result, record.last_error) == (args, {"text": TEXT}, ERROR)
    assert [a.error for a in backend.attempts(job.id)] == [ERROR, None]
    assert [m.notification.payload for m in backend.outbox_pending()] == [{"text": TEXT}]
