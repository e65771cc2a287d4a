"""Cancelling a running job with real worker processes, on every engine.

``jobdef cancel`` of a running job ends its attempt ``cancelled`` in the store at
once; the worker learns it at the job's next heartbeat, which the fence refuses,
and stops the handler's child. The handler (``flow_handlers.flow_step``) writes a
mark when it starts and another when its sleep ends: a stopped handler never
writes the second. A cancel that meets a handler that has just finished races its
completion: exactly one of them wins, and the job's attempt row says which.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import ledger_handlers
import pytest
from runtime_workers import Workers

from jobdef.backends.records import NewJob
from jobdef.cli import main
from support import eventually
from support.workers import process_alive

pytestmark = [pytest.mark.slow, pytest.mark.every_engine]

JOBS = """\
apiVersion: jobdef/v1
kind: Job
name: long_job
handler: flow_handlers:flow_step
max_attempts: 3
backoff: {strategy: fixed, initial: 0s, jitter: none}
timeout: 60s
errors: {default: retry}
args:
  ledger: {type: string}
  step: {type: string}
  seconds: {type: number, required: false}
  marks: {type: string, required: false}
  linger: {type: number, required: false}
"""


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "jobs.yaml").write_text(JOBS, "utf-8")
    started = Workers(db_url, tmp_path, sheets=sheets)
    yield started
    started.stop_all()


def _enqueue(backend, ledger: str, marks: Path, seconds: float, linger: float = 0.0) -> int:
    args = {
        "ledger": ledger,
        "step": "s",
        "seconds": seconds,
        "marks": str(marks),
        "linger": linger,
    }
    [stored] = backend.enqueue([NewJob(job="long_job", args=args, queue="default", max_attempts=3)])
    return stored.id


def _runs(ledger: str, job_id: int) -> int:
    return [job for job, _, _ in ledger_handlers.entries(ledger)].count(job_id)


def test_jobdef_cancel_of_a_running_job_stops_its_handler(
    db_url, backend, workers, ledger, marks, *, capsys
):
    job_id = _enqueue(backend, ledger, marks, seconds=25.0)
    worker = workers.start("--concurrency", "1", lease="3s")
    started = marks / f"{job_id}.started"
    eventually(started.exists, timeout=60, what="the handler to start")
    pid = int(started.read_text("utf-8"))

    assert main(["cancel", str(job_id), "--note", "wrong input", "--db", db_url]) == 0
    out = capsys.readouterr().out
    # Lease 3s: a heartbeat every second, and one turn of the worker's loop.
    assert out == (
        f"job {job_id} cancelled (it was running: its worker stops the handler within 1.1s)\n"
    )
    record = backend.get(job_id)
    assert (record.state, record.note) == ("cancelled", "cancelled with jobdef cancel: wrong input")
    [attempt] = backend.attempts(job_id)
    assert (attempt.attempt, attempt.outcome, attempt.worker_id) == (
        1,
        "cancelled",
        worker_id := record.worker_id,
    )
    assert worker_id
    assert attempt.finished_at is not None
    assert attempt.error.message == (
        "the attempt was cancelled while it ran: cancelled with jobdef cancel: wrong input"
    )

    eventually(
        lambda: not process_alive(pid), timeout=20, what="the cancelled handler to be stopped"
    )
    eventually(lambda: "was cancelled" in workers.log(), timeout=10, what="the worker's line")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert not (marks / f"{job_id}.finished").exists()
    assert _runs(ledger, job_id) == 1
    assert [a.outcome for a in backend.attempts(job_id)] == ["cancelled"]
    assert backend.get(job_id).state == "cancelled"
    [line] = [x for x in workers.log().splitlines() if "was cancelled" in x]
    assert f"job {job_id} long_job attempt 1 was cancelled" in line
    assert "late writes refused" not in line

    assert main(["cancel", str(job_id), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert f"job {job_id} is cancelled; only queued and running jobs can be cancelled" in err


def test_a_cancel_that_meets_a_handler_just_finished_races_its_completion_once(
    backend, workers, ledger, marks
):
    """The cancel is sent around the moment the handler returns, before or after the
    worker records the completion: whichever commits first wins, the other is
    refused, and the job's one attempt row agrees with its state."""
    rng = random.Random(7)
    worker = workers.start("--concurrency", "1", lease="3s")
    won: dict[str, int] = {"done": 0, "cancelled": 0}
    jobs: list[tuple[int, str | None]] = []
    for _ in range(12):
        job_id = _enqueue(backend, ledger, marks, seconds=0.05, linger=0.02)
        finished = marks / f"{job_id}.finished"
        eventually(finished.exists, timeout=60, what=f"job {job_id}'s handler to finish")
        # Around the handler's return and the worker's turn that records it.
        time.sleep(rng.uniform(0.0, 0.12))
        was = backend.cancel(job_id, "cancelled by the race test")
        eventually(
            lambda job_id=job_id: backend.get(job_id).state in ("done", "cancelled"),
            what=f"job {job_id} to end",
        )
        jobs.append((job_id, was))
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    for job_id, was in jobs:
        state = backend.get(job_id).state
        # The cancel took the job only while it was still running; otherwise it was done.
        assert state == ("cancelled" if was == "running" else "done"), (job_id, was, state)
        assert [a.outcome for a in backend.attempts(job_id)] == [state]
        assert _runs(ledger, job_id) == 1
        won[state] += 1
    assert sum(won.values()) == len(jobs)
    assert "retried" not in workers.log().replace("0 retried", "")
