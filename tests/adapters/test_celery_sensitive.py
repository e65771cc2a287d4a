"""Celery's worker logs, events and monitors show a task's ``kwargsrepr``, which by default
is the repr of its kwargs: a task sent through a sheet carries its args as every display
shows them, sensitive ones as ***, while the message body keeps them for the handler.

The message is read back as the real Redis broker holds it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import redis
from celery import Celery
from sensitive_acts import sign_in_project

from jobdef.adapters.celery import configure, sheet_task

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
