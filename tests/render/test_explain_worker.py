"""`jobdef explain`'s timeline is what the worker does: a real run, attempt by attempt."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord
from jobdef.render.explain import explain
from jobdef.runtime import Worker, WorkerSettings, connect
from jobdef.sheets.pipeline import load_registry
from support import eventually

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: always_fails
handler: explain_handlers:always_fails
max_attempts: 4
backoff: {strategy: fixed, initial: 1s, jitter: none}
timeout: 10s
errors: {retry: [ConnectionError], default: fatal}
"""
# How late the worker may start an attempt after the schedule allows it: its
# poll interval plus process hand-off, on a busy machine.
SLACK = 1.5


def _dead(backend: Backend, job_id: int) -> JobRecord | None:
    record = backend.get(job_id)
    return record if record is not None and record.state == "dead" else None


@pytest.mark.slow
def test_a_failing_job_runs_on_the_timeline_that_explain_shows(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(SHEET, encoding="utf-8")
    registry = load_registry([tmp_path])
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    data = json.loads(explain(registry.job("always_fails"), registry, "json"))
    rows = data["timeline"]["rows"]

    with connect(url, registry) as queue:
        job_id = queue.enqueue("always_fails", {}).id
    backend = open_backend(url)
    worker = Worker(backend, registry, WorkerSettings(poll_interval=0.05))
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        record = eventually(lambda: _dead(backend, job_id), what="the job to go dead")
    finally:
        worker.request_stop()
        worker.request_stop()
        thread.join(timeout=30)
    attempts = backend.attempts(job_id)
    backend.close()

    assert [a.attempt for a in attempts] == [row["attempt"] for row in rows] == [1, 2, 3, 4]
    assert all(a.error is not None and a.error.type.endswith("ConnectionError") for a in attempts)
    enqueued = record.created_at
    for index, (attempt, row) in enumerate(zip(attempts, rows, strict=True)):
        offset = attempt.started_at - enqueued
        # Every attempt failed at once, so each starts at the timeline's earliest start
        # (waits at their minimum, no time spent running), late only by scheduling.
        assert row["earliest_start"] - 0.01 <= offset, (attempt, row)
        assert offset <= row["earliest_start"] + row["attempt"] * SLACK, (attempt, row)
        if index:
            # The pause after each failure is the timeline's wait, never shorter.
            finished = attempts[index - 1].finished_at
            assert finished is not None
            pause = attempt.started_at - finished
            assert row["wait_min"] - 0.01 <= pause <= row["wait_max"] + SLACK, (pause, row)
