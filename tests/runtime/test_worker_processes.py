"""The worker as real processes: kill -9, timeouts, crashes, stale writes, SIGTERM, many workers."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest

from jobdef.runtime.queue import Queue
from support import eventually

pytestmark = pytest.mark.slow


def _state(backend, job_id):
    return backend.get(job_id).state


def _outcomes(backend, job_id):
    return [a.outcome for a in backend.attempts(job_id)]


def test_kill_9_mid_job_is_reclaimed_after_the_lease_and_completes(
    backend, registry, workers, tmp_path
):
    marker = str(tmp_path / "started")
    job = Queue(backend, registry).enqueue("sleep", {"seconds": 2, "marker": marker}).id
    victim = workers.start(name="victim")
    eventually(lambda: Path(f"{marker}.1").exists(), what="attempt 1 to start")
    victim.kill()
    victim.wait()
    workers.start(name="rescuer")
    eventually(lambda: _state(backend, job) == "done", what="the reclaimed job to finish")
    attempts = backend.attempts(job)
    assert [a.outcome for a in attempts] == ["reclaimed", "done"]
    assert attempts[0].error.type == "jobdef.runtime.errors.LeaseExpired"
    assert attempts[0].worker_id != attempts[1].worker_id


def test_four_workers_run_every_job_exactly_once(backend, registry, workers, db_url):
    total = 5000 * 4
    Queue(backend, registry).enqueue_many("noop", [{"n": i} for i in range(total)])
    processes = [workers.start("--burst", name=f"w{i}", lease="30s") for i in range(4)]
    for process in processes:
        assert process.wait(300) == 0
    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    try:
        per_job = conn.execute(
            "SELECT count(*), sum(outcome = 'done') FROM jobdef_attempts GROUP BY job_id"
        ).fetchall()
        doubles = conn.execute(
            "SELECT job_id FROM jobdef_attempts GROUP BY job_id HAVING count(*) > 1"
        ).fetchall()
        done = conn.execute("SELECT count(*) FROM jobdef_jobs WHERE state = 'done'").fetchone()[0]
        by_worker = conn.execute(
            "SELECT count(DISTINCT worker_id) FROM jobdef_attempts"
        ).fetchone()[0]
    finally:
        conn.close()
    assert len(per_job) == total
    assert doubles == []
    assert all(row == (1, 1) for row in per_job)
    assert done == total
    assert by_worker >= 2


def test_handler_past_its_timeout_is_killed_and_retried_per_sheet(backend, registry, workers):
    job = Queue(backend, registry).enqueue("sleep_first", {"seconds": 60}).id
    workers.start()
    eventually(lambda: _state(backend, job) == "done", what="the retried job")
    attempts = backend.attempts(job)
    assert [a.outcome for a in attempts] == ["timeout", "done"]
    assert attempts[0].error.type == "jobdef.runtime.errors.AttemptTimedOut"
    assert "timeout of 1s" in attempts[0].error.message
    assert attempts[0].finished_at - attempts[0].started_at < 30


@pytest.mark.parametrize(("how", "detail"), [("exit", "status 7"), ("segfault", "SIGSEGV")])
def test_handler_that_kills_its_process_is_recorded_and_retried(
    backend, registry, workers, how, detail
):
    job = Queue(backend, registry).enqueue("exit_first", {"how": how}).id
    workers.start()
    eventually(lambda: _state(backend, job) == "done", what="the retried job")
    attempts = backend.attempts(job)
    assert [a.outcome for a in attempts] == ["crashed", "done"]
    assert attempts[0].error.type == "jobdef.runtime.errors.HandlerCrashed"
    assert detail in attempts[0].error.message


def test_errors_are_classified_by_the_sheet_and_dead_jobs_reach_the_outbox(
    backend, registry, workers, db_url
):
    queue = Queue(backend, registry)
    retried = queue.enqueue("fail", {"kind": "connection"}).id
    fatal = queue.enqueue("fail", {"kind": "permission"}).id
    workers.start()
    eventually(lambda: _state(backend, retried) == "dead" and _state(backend, fatal) == "dead")
    assert _outcomes(backend, retried) == ["retry", "retry", "dead"]
    assert _outcomes(backend, fatal) == ["dead"]
    assert "OSError is listed in errors.fatal" in backend.get(fatal).last_error.message
    assert "attempts used up (3 of 3)" in backend.get(retried).last_error.message
    # Delivered or not: the worker's outbox service may already have sent one.
    conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    try:
        payloads = [row[0] for row in conn.execute("SELECT payload FROM jobdef_outbox")]
    finally:
        conn.close()
    assert {json.loads(p)["job_id"] for p in payloads} == {retried, fatal}


def test_stale_workers_late_complete_is_refused(backend, registry, workers, tmp_path):
    marker = str(tmp_path / "started")
    job = Queue(backend, registry).enqueue("sleep", {"seconds": 1.5, "marker": marker}).id
    stale = workers.start(name="stale")
    eventually(lambda: Path(f"{marker}.1").exists(), what="attempt 1 to start")
    stale.send_signal(signal.SIGSTOP)  # frozen: no heartbeat, its lease expires
    workers.start(name="fresh")
    eventually(lambda: _state(backend, job) == "done", what="the fresh worker to finish")
    stale.send_signal(signal.SIGCONT)  # its handler finished meanwhile; it reports late
    eventually(lambda: "late complete" in workers.log("stale"), what="the refusal in the log")
    assert _outcomes(backend, job) == ["reclaimed", "done"]
    assert backend.get(job).attempt == 2


def test_sigterm_drains_running_jobs_and_releases_the_rest(backend, registry, workers, tmp_path):
    marker = str(tmp_path / "started")
    queue = Queue(backend, registry)
    ids = [queue.enqueue("sleep", {"seconds": 1, "marker": f"{marker}{i}"}).id for i in range(6)]
    worker = workers.start("--concurrency", "2", "--grace", "20s", lease="30s")
    eventually(lambda: any(Path(f"{marker}{i}.1").exists() for i in range(6)))
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    states = [_state(backend, i) for i in ids]
    assert states.count("running") == 0
    assert states.count("done") >= 1  # what had started finished within the grace period
    assert states.count("queued") >= 1  # what had not started was given back
    assert states.count("done") + states.count("queued") == 6
    for job_id, state in zip(ids, states, strict=True):
        if state == "queued":
            assert backend.get(job_id).attempt == 0
    workers.start("--burst", "--concurrency", "2", name="second")
    eventually(lambda: all(_state(backend, i) == "done" for i in ids), what="all jobs done")


def test_second_signal_stops_at_once_and_counts_the_attempt_it_cut_short(
    backend, registry, workers, tmp_path
):
    marker = str(tmp_path / "started")
    job = Queue(backend, registry).enqueue("sleep", {"seconds": 60, "marker": marker}).id
    worker = workers.start("--grace", "60s", lease="30s")
    eventually(lambda: Path(f"{marker}.1").exists())
    worker.send_signal(signal.SIGTERM)
    eventually(lambda: "draining" in workers.log(), what="the drain to begin")
    worker.send_signal(signal.SIGINT)
    assert worker.wait(15) == 0
    record = backend.get(job)
    assert (record.state, record.attempt) == ("queued", 1)  # it ran: its attempt is used
    assert _outcomes(backend, job) == ["crashed"]
