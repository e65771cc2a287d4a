"""Celery worker processes and the test's own app, for the Celery adapter's tests.

The worker imports ``celery_cells:app`` configured from the environment that
:func:`cells_env` builds; :func:`cells_app` builds the same app in the test.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from celery import Celery
from celery_cells import make_app

from jobdef.backends import open_backend
from support.workers import Processes, WorkerProcess


def celery_worker(
    processes: Processes, name: str, app_env: dict[str, str], queue: str
) -> WorkerProcess:
    """A Celery worker (prefork pool, 4 children) on ``queue``, as ``name@host``."""
    command = [
        sys.executable, "-m", "celery", "-A", "celery_cells:app", "worker",
        "--pool", "prefork", "--concurrency", "4", "--queues", queue,
        "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO",
        "--hostname", f"{name}@%h",
    ]  # fmt: skip
    processes.env = app_env
    return processes.start(name, command)


def cells_env(
    *,
    sheets: Path,
    db: Path | str,
    broker: str,
    redis_url: str,
    prefix: str,
    hook: str,
    ledger: str | None = None,
    visibility_timeout: float = 3600,
) -> dict[str, str]:
    """The environment of a worker of ``celery_cells:app`` (``db``: a SQLite file or a
    database URL; ``ledger``: the Redis of the acts' ledger, default ``redis_url``)."""
    return {
        "JOBDEF_TEST_SHEETS": str(sheets),
        "JOBDEF_TEST_DATABASE": db if isinstance(db, str) else f"sqlite:///{db}",
        "JOBDEF_TEST_BROKER": broker,
        "JOBDEF_TEST_REDIS": redis_url,
        "JOBDEF_TEST_LEDGER_REDIS": ledger or redis_url,
        "JOBDEF_TEST_PREFIX": prefix,
        "JOBDEF_TEST_QUEUE": prefix,
        "JOBDEF_TEST_HOOK": hook,
        "JOBDEF_TEST_VISIBILITY": repr(visibility_timeout),
    }


def cells_app(env: dict[str, str], **conf: Any) -> Celery:
    """The app of ``env`` in this process (``conf``: settings before configure)."""
    open_backend(env["JOBDEF_TEST_DATABASE"]).close()  # created before any worker writes
    return make_app(
        sheets=env["JOBDEF_TEST_SHEETS"],
        database=env["JOBDEF_TEST_DATABASE"],
        broker=env["JOBDEF_TEST_BROKER"],
        redis=env["JOBDEF_TEST_REDIS"],
        prefix=env["JOBDEF_TEST_PREFIX"],
        queue=env["JOBDEF_TEST_QUEUE"],
        visibility_timeout=float(env["JOBDEF_TEST_VISIBILITY"]),
        **conf,
    )
