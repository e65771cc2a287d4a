"""The framework's ``task_started`` and ``task_finished``, and the enqueue counter.

Real worker processes run the tasks (on SQLite and on PostgreSQL); receivers
connected in the worker's process (jdproject.tasks, when JDPROJECT_SIGNALS is set)
log what they get, in order: the attempt's result, its status and errors. A receiver
that raises is logged and changes nothing. An enqueue through Django counts in
jobdef_jobs_enqueued_total, in the process that makes it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jd_support import Project, drain, stop, unique, worker

from jobdef.contrib.django.compat import TaskResultStatus
from support import eventually

pytestmark = pytest.mark.slow


def test_signals_reach_receivers_in_the_worker_in_order_with_the_attempts_result(
    project: Project, engine_alias: str
) -> None:
    from jdproject import tasks

    def using(task: Any) -> Any:
        return task.using(backend=engine_alias)

    item = unique()
    reported = using(tasks.report).enqueue(item=item, size=1)
    pinged = using(tasks.ping).enqueue(unique())  # an async task
    forbidden = using(tasks.forbidden).enqueue(unique())  # fatal at once
    flaky = using(tasks.flaky).enqueue(unique())  # retried twice, 1s apart, then dead
    process = worker(project, engine_alias, env={"JDPROJECT_SIGNALS": "1"})
    try:
        eventually(
            lambda: len(project.signal_lines(flaky)) == 6,
            timeout=60,
            what="the third attempt of flaky",
        )
    finally:
        code, _out, err = stop(process)
    assert code == 0, err

    # What the task returned, as JSON: the tuple is a list.
    value = json.dumps({"item": item, "counts": [1, 2], "text": "x", "note": "é"}, sort_keys=True)
    assert project.signal_lines(reported) == [
        "started report status=RUNNING attempts=1 sender=JobdefBackend return=null errors=",
        f"finished report status=SUCCESSFUL attempts=1 sender=JobdefBackend return={value} errors=",
    ]
    assert project.signal_lines(pinged) == [
        "started ping status=RUNNING attempts=1 sender=JobdefBackend return=null errors=",
        "finished ping status=SUCCESSFUL attempts=1 sender=JobdefBackend return=null errors=",
    ]
    assert project.signal_lines(forbidden) == [
        "started forbidden status=RUNNING attempts=1 sender=JobdefBackend return=null errors=",
        "finished forbidden status=FAILED attempts=1 sender=JobdefBackend return=null "
        "errors=builtins.PermissionError",
    ]
    error = "builtins.ConnectionError"
    assert project.signal_lines(flaky) == [
        "started flaky status=RUNNING attempts=1 sender=JobdefBackend return=null errors=",
        # Retried: ready to be executed again.
        f"finished flaky status=READY attempts=1 sender=JobdefBackend return=null errors={error}",
        f"started flaky status=RUNNING attempts=2 sender=JobdefBackend return=null errors={error}",
        "finished flaky status=READY attempts=2 sender=JobdefBackend return=null "
        f"errors={error},{error}",
        "started flaky status=RUNNING attempts=3 sender=JobdefBackend return=null "
        f"errors={error},{error}",
        "finished flaky status=FAILED attempts=3 sender=JobdefBackend return=null "
        f"errors={error},{error},{error}",
    ]
    flaky.refresh()
    assert flaky.status == TaskResultStatus.FAILED


def test_a_receiver_that_raises_is_logged_and_changes_nothing(
    project: Project, engine_alias: str
) -> None:
    from jdproject import tasks

    reported = tasks.report.using(backend=engine_alias).enqueue(item=unique(), size=2)
    err = drain(project, engine_alias, JDPROJECT_SIGNALS="raise")
    reported.refresh()
    assert reported.status == TaskResultStatus.SUCCESSFUL
    assert reported.attempts == 1
    assert [line.split(" ", 1)[0] for line in project.signal_lines(reported)] == [
        "started",
        "finished",
    ]
    receiver = "jdproject.tasks._signalled.<locals>.receiver"
    lines = [line for line in err.splitlines() if "jobdef.worker ERROR" in line]
    assert [line.split(" jobdef.worker ERROR ", 1)[1] for line in lines] == [
        f"job {reported.id} (report) attempt 1: a receiver of {signal}, {receiver}, raised "
        f"RuntimeError: the {name} receiver is broken; the attempt's outcome is the task's"
        for signal, name in (("task_started", "started"), ("task_finished", "finished"))
    ], err


def test_an_enqueue_through_django_is_counted(project: Project, engine_alias: str) -> None:
    registry = pytest.importorskip("prometheus_client").REGISTRY
    from jdproject import tasks

    labels = {"job": "send_confirmation", "queue": "mail"}

    def counted(name: str) -> float:
        return registry.get_sample_value(name, labels) or 0.0

    enqueued, merged = "jobdef_jobs_enqueued_total", "jobdef_jobs_enqueue_deduplicated_total"
    before, before_merged = counted(enqueued), counted(merged)
    confirm = tasks.send_confirmation.using(backend=engine_alias)
    reservation = unique()
    confirm.enqueue(reservation)
    confirm.enqueue(reservation)  # the same idempotency key: merged, not a new row
    assert counted(enqueued) == before + 1
    assert counted(merged) == before_merged + 1
