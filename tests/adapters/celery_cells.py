"""The Celery app of the adapter tests: one sheet task per sheet of the test's folder.

The worker process imports ``celery_cells:app``, configured from the environment
the test gives it; the test process builds the same app with :func:`make_app`.
"""

from __future__ import annotations

import os
from typing import Any

from adapter_acts import act
from celery import Celery

from jobdef.adapters.celery import configure, sheet_task
from jobdef.sheets.pipeline import load_registry


def make_app(
    *,
    sheets: str,
    database: str,
    broker: str,
    redis: str,
    prefix: str,
    queue: str,
    visibility_timeout: float = 3600,
    **conf: Any,
) -> Celery:
    app = Celery(f"cells-{prefix}", broker=broker)
    app.conf.update(
        task_default_queue=queue,
        task_ignore_result=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": visibility_timeout},
        **conf,
    )
    configure(app, sheets=sheets, database=database, redis=redis, prefix=prefix)
    for name in load_registry([sheets]).jobs:
        _task(app, name, prefix)
    return app


def _task(app: Celery, name: str, prefix: str) -> Any:
    # Task names are unique per process in Celery: each test's carry its prefix.
    @sheet_task(app, name, name=f"{prefix}.{name}")
    def run(cell: str, script: list[str], marker: str = "") -> None:
        act(cell, script, marker)

    return run


def _from_environment() -> Celery | None:
    env = os.environ
    if "JOBDEF_TEST_SHEETS" not in env:
        return None
    return make_app(
        sheets=env["JOBDEF_TEST_SHEETS"],
        database=env["JOBDEF_TEST_DATABASE"],
        broker=env["JOBDEF_TEST_BROKER"],
        redis=env["JOBDEF_TEST_REDIS"],
        prefix=env["JOBDEF_TEST_PREFIX"],
        queue=env["JOBDEF_TEST_QUEUE"],
        visibility_timeout=float(env.get("JOBDEF_TEST_VISIBILITY", "3600")),
    )


app = _from_environment()
