"""RQ's worker logs each job's description (by default the call, args and all) when it
starts and ends it: a job enqueued through jobdef is described with its args as every
display shows them, sensitive ones as ***; the handler still gets them whole.

A real ``rq worker --burst`` with jobdef's worker class runs on Redis.
"""

from __future__ import annotations

import sys
from pathlib import Path

import redis
from sensitive_acts import sign_in_project, stored_text

from jobdef.adapters.rq import SheetQueue
from jobdef.backends import open_backend
from support.workers import Processes

PASSWORD = "Hunter2-correct-horse"


def test_the_rq_worker_log_and_the_job_description_hide_a_sensitive_arg(
    tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    sheets, database = sign_in_project(tmp_path, prefix)
    seen = tmp_path / "seen.txt"
    processes.env = {"JOBDEF_DATABASE_URL": database, "JOBDEF_TEST_SEEN": str(seen)}
    client = redis.Redis.from_url(redis_url)
    queue = SheetQueue(client, sheets=str(sheets), prefix=prefix)
    job = queue.enqueue("sign_in", user="ann", password=PASSWORD)
    assert PASSWORD not in job.description
    assert job.description == 'sign_in {"user":"ann","password":"***"}'

    command = [
        sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", redis_url,
        "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-worker", prefix,
    ]  # fmt: skip
    worker = processes.start("worker", command)
    assert worker.process.wait(60) == 0, worker.log()
    assert seen.read_text(encoding="utf-8") == f"ann:{PASSWORD}"  # the handler's, whole
    log = worker.log()
    assert 'sign_in {"user":"ann","password":"***"}' in log
    assert PASSWORD not in log
    client.close()


def test_a_handler_error_that_quotes_a_sensitive_arg_is_stored_without_it(
    tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    """The dead record, its attempts and the run store hold the error with *** where
    the handler quoted the password, as jobdef's own worker stores it."""
    sheets, database = sign_in_project(tmp_path, prefix)
    processes.env = {"JOBDEF_DATABASE_URL": database, "JOBDEF_TEST_SEEN": str(tmp_path / "s")}
    client = redis.Redis.from_url(redis_url)
    queue = SheetQueue(client, sheets=str(sheets), prefix=prefix)
    queue.enqueue("sign_in", user="refused", password=PASSWORD)
    command = [
        sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", redis_url,
        "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-worker", prefix,
    ]  # fmt: skip
    worker = processes.start("worker", command)
    assert worker.process.wait(60) == 0, worker.log()
    client.close()
    backend = open_backend(database)
    try:
        [dead] = backend.list_jobs(state="dead")
        [attempt] = backend.attempts(dead.id)
    finally:
        backend.close()
    assert dead.last_error is not None
    assert dead.last_error.message.startswith("sign-in of refused with *** refused")
    assert attempt.error is not None
    assert attempt.error.message.startswith("sign-in of refused with *** refused")
    assert dead.args == {"user": "refused", "password": PASSWORD}  # the handler's, whole
    text = stored_text(database, redis_url, prefix).replace(repr(PASSWORD), "")
    assert text.count(PASSWORD) == 1  # the args of the dead row, nothing else
