"""One model of the attempts table on every engine: a row is written once, when the
attempt ends, and errors are stored as one JSON object in the same columns."""

from __future__ import annotations

import json
from typing import Any

from jobdef.backends.records import ErrorInfo, NewJob

ERROR = ErrorInfo("smtplib.SMTPServerDisconnected", "the server hung up", "Traceback (most...")


def _decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def test_an_attempt_has_no_row_while_it_runs_and_one_when_it_ends(backend, store, worker, clock):
    [job] = backend.enqueue([NewJob("mail", {}, "default", max_attempts=3)])
    first = worker.claim_one()
    attempts_of = "SELECT attempt, outcome FROM {prefix}attempts WHERE job_id = {p} ORDER BY id"
    assert store.raw(attempts_of, job.id) == []
    [running] = backend.attempts(job.id)
    assert (running.attempt, running.worker_id, running.finished_at) == (1, "w1", None)
    assert running.started_at == clock()

    clock.advance(5)
    assert backend.retry(first.lease, ERROR, run_after=clock(), delay=0.0)
    clock.advance(1)
    second = worker.claim_one()
    assert store.raw(attempts_of, job.id) == [(1, "retry")]
    clock.advance(2)
    assert backend.complete([second.lease]) == [True]
    assert store.raw(attempts_of, job.id) == [(1, "retry"), (2, "done")]
    history = backend.attempts(job.id)
    assert [(a.started_at, a.finished_at) for a in history] == [
        (clock() - 8, clock() - 3),
        (clock() - 2, clock()),
    ]


def test_an_error_is_one_json_object_in_the_jobs_and_the_attempts_table(
    backend, store, worker, clock
):
    [job] = backend.enqueue([NewJob("mail", {}, "default", max_attempts=1)])
    assert backend.bury(worker.claim_one().lease, ERROR)
    expected = {"type": ERROR.type, "message": ERROR.message, "traceback": ERROR.traceback}
    [(stored,)] = store.raw("SELECT error FROM {prefix}attempts WHERE job_id = {p}", job.id)
    [(last,)] = store.raw("SELECT last_error FROM {prefix}jobs WHERE id = {p}", job.id)
    assert _decoded(stored) == _decoded(last) == expected
    [attempt] = backend.attempts(job.id)
    assert attempt.error == ERROR
    record = backend.get(job.id)
    assert record is not None
    assert record.last_error == ERROR
