"""Celery's worker logs, events and monitors show a task's ``kwargsrepr``, which by default
is the repr of its kwargs: a task sent through a sheet carries its args as every display
shows them, sensitive ones as ***, while the message body keeps them for the handler.

The message is read back as the real Redis broker holds it.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import redis
from celery import Celery
from sensitive_acts import celery_app, sign_in_project, stored_text

from jobdef.adapters.celery import configure, sheet_task
from jobdef.backends import open_backend
from support import eventually
from support.workers import Processes

PASSWORD = "Hunter2-correct-horse"


def test_a_sent_task_describes_its_sensitive_args_as_stars(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    sheets, database = sign_in_project(tmp_path, prefix)
    app = Celery(f"sensitive-{prefix}", broker=redis_url)
    app.conf.update(task_ignore_result=True, broker_connection_retry_on_startup=True)
    configure(app, sheets=str(sheets), database=database, redis=redis_url, prefix=prefix)

    @sheet_task(app, "sign_in", name=f"{prefix}.sign_in")
    def sign_in(user: str, password: str) -> None:
        pass

    sign_in.delay(user="ann", password=PASSWORD)
    client = redis.Redis.from_url(redis_url)
    try:
        [raw] = client.lrange(prefix, 0, -1)
    finally:
        client.close()
    message = json.loads(raw)
    headers = message["headers"]
    assert headers["kwargsrepr"] == '{"user":"ann","password":"***"}'
    assert PASSWORD not in json.dumps(headers)
    _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
    assert kwargs == {"user": "ann", "password": PASSWORD}  # the handler's, whole


def test_a_handler_error_that_quotes_a_sensitive_arg_is_stored_without_it(
    tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    """On a real Celery worker: the dead record, its attempts and the run store hold
    the error with *** where the handler quoted the password, as jobdef's own worker
    stores it."""
    sheets, database = sign_in_project(tmp_path, prefix)
    processes.env = {
        "JOBDEF_TEST_SHEETS": str(sheets),
        "JOBDEF_TEST_DATABASE": database,
        "JOBDEF_TEST_REDIS": redis_url,
        "JOBDEF_TEST_PREFIX": prefix,
        "JOBDEF_TEST_SEEN": str(tmp_path / "seen"),
    }
    command = [
        sys.executable, "-m", "celery", "-A", "sensitive_acts:app", "worker", "--pool", "solo",
        "--queues", prefix, "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip
    processes.start("worker", command)
    app = celery_app(str(sheets), database, redis_url, prefix)
    app.tasks[f"{prefix}.sign_in"].delay(user="refused", password=PASSWORD)
    backend = open_backend(database)
    try:
        [dead] = eventually(lambda: backend.list_jobs(state="dead"), 60, "the dead record")
        [attempt] = eventually(lambda: backend.attempts(dead.id), 10, "its attempt")
    finally:
        backend.close()
    assert dead.last_error is not None
    assert dead.last_error.message.startswith("sign-in of refused with *** refused")
    assert attempt.error is not None
    assert attempt.error.message.startswith("sign-in of refused with *** refused")
    assert dead.args == {"user": "refused", "password": PASSWORD}  # the handler's, whole
    text = stored_text(database, redis_url, prefix).replace(repr(PASSWORD), "")
    assert text.count(PASSWORD) == 1  # the args of the dead row, nothing else
