"""The job the adapters' sensitive-args tests run: its sheet and store, and a handler that
proves it got the value whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def sign_in(user: str, password: str) -> None:
    """Records what it got; for the user ``refused``, raises an error quoting the
    password, as a careless handler does."""
    Path(os.environ["JOBDEF_TEST_SEEN"]).write_text(f"{user}:{password}", encoding="utf-8")
    if user == "refused":
        raise PermissionError(f"sign-in of {user} with {password} refused")


SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sign_in
handler: sensitive_acts:sign_in
queue: {queue}
args:
  user: {{type: string}}
  password: {{type: string, sensitive: true}}
max_attempts: 1
timeout: 30s
errors: {{default: fatal}}
"""


def sign_in_project(tmp_path: Path, queue: str) -> tuple[Path, str]:
    """The sheets folder of ``sign_in`` on ``queue``, and a fresh SQLite job database."""
    from jobdef.backends import open_backend

    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "sign_in.yaml").write_text(SHEET.format(queue=queue), encoding="utf-8")
    database = f"sqlite:///{tmp_path / 'jobdef.db'}"
    open_backend(database).close()
    return sheets, database


def stored_text(database: str, redis_url: str, prefix: str) -> str:
    """Everything jobdef stored of the runs: the job database's rows and the run
    store's keys under ``prefix``."""
    import sqlite3

    import redis

    with sqlite3.connect(database.removeprefix("sqlite:///")) as conn:
        rows = "\n".join(conn.iterdump())
    client = redis.Redis.from_url(redis_url)
    try:
        held = [str(client.dump(key)) for key in client.scan_iter(f"{prefix}:*")]
    finally:
        client.close()
    return rows + "\n".join(held)


def celery_app(sheets: str, database: str, redis_url: str, prefix: str) -> Any:
    """A Celery app on ``redis_url`` whose ``{prefix}.sign_in`` is the sheet task."""
    from celery import Celery

    from jobdef.adapters.celery import configure, sheet_task

    app = Celery(f"sensitive-{prefix}", broker=redis_url)
    app.conf.update(
        task_ignore_result=True,
        task_default_queue=prefix,
        broker_connection_retry_on_startup=True,
    )
    configure(app, sheets=sheets, database=database, redis=redis_url, prefix=prefix)
    sheet_task(app, "sign_in", name=f"{prefix}.sign_in")(sign_in)
    return app


# The worker's app (``celery -A sensitive_acts:app``), from the test's environment.
app = (
    celery_app(*(os.environ[f"JOBDEF_TEST_{n}"] for n in ("SHEETS", "DATABASE", "REDIS", "PREFIX")))
    if "JOBDEF_TEST_SHEETS" in os.environ
    else None
)
