"""Real worker processes run the tasks of the test project, on SQLite and on PostgreSQL.

``python -m jobdef worker`` with ``DJANGO_SETTINGS_MODULE`` (and ``manage.py
jobdef_worker``) sets Django up in the worker and in each child; the sheet's retry
schedule, dead letter and notification apply to a task as to any job.
"""

from __future__ import annotations

import itertools
import os
import signal
from typing import Any

import pytest
from django.db import connections, transaction
from jd_support import Project, stop, unique, worker
from notify_servers import WebhookServer

from jobdef.contrib.django.compat import TaskResultStatus
from support import eventually

pytestmark = pytest.mark.slow


def using(task: Any, alias: str) -> Any:
    return task.using(backend=alias)


def test_one_worker_runs_retries_and_buries_per_the_sheets(
    project: Project, engine_alias: str
) -> None:
    """On SQLite through ``manage.py jobdef_worker``, on PostgreSQL through ``jobdef
    worker`` with DJANGO_SETTINGS_MODULE: the same worker, Django set up in its children.

    Each handler process takes one job at a time (``--prefetch 1``), so every attempt row
    of a job is a run of its handler. With jobs handed ahead, one waiting behind a task
    that runs past the 0.5s recall (a child's first Django task can, on a loaded host) is
    taken back and, when every child is that busy, given back to the queue: a
    ``released`` row that uses no attempt, then the run, claimed anew.
    """
    from jdproject import tasks

    reservation, item, ping = unique(), unique(), unique()
    with transaction.atomic(using=engine_alias):
        confirmed = using(tasks.send_confirmation, engine_alias).enqueue(reservation)
    with transaction.atomic(using=engine_alias):
        using(tasks.send_confirmation, engine_alias).enqueue(unique())
        transaction.set_rollback(True, using=engine_alias)
    flaky = using(tasks.flaky, engine_alias).enqueue(item)
    forbidden = using(tasks.forbidden, engine_alias).enqueue(item)
    pinged = using(tasks.ping, engine_alias).enqueue(ping)  # an async task

    hook = WebhookServer().start()
    try:
        process = worker(
            project,
            engine_alias,
            "--concurrency",
            "2",
            "--prefetch",
            "1",
            env={"JDPROJECT_HOOK_URL": hook.url},
            manage=engine_alias == "default",
        )
        try:
            eventually(
                lambda: (
                    {r.body.get("job_id") for r in hook.received}
                    >= {int(flaky.id), int(forbidden.id)}
                ),
                timeout=60,
                what="the dead notifications of flaky and forbidden",
            )
        finally:
            code, _out, err = stop(process)
        assert code == 0, err
    finally:
        hook.stop()

    lines = project.log_lines()
    # Committed: run once, as attempt 1, in its own job; rolled back: never run.
    assert [line for line in lines if line.startswith(f"confirm {reservation} ")] == [
        f"confirm {reservation} job={confirmed.id} attempt=1"
    ]
    confirmed.refresh()
    assert confirmed.status == TaskResultStatus.SUCCESSFUL
    assert confirmed.is_finished
    assert confirmed.return_value == "sent"  # what the task returned
    assert confirmed.attempts == 1
    assert confirmed.errors == []
    assert confirmed.started_at is not None
    assert confirmed.finished_at is not None
    assert f"ping {ping} job={pinged.id}" in lines
    assert tasks.ping.using(backend=engine_alias).get_result(pinged.id).status == "SUCCESSFUL"

    # Retryable: the sheet's 3 attempts, 1s apart (fixed backoff, no jitter), then dead.
    flaky.refresh()
    assert flaky.status == TaskResultStatus.FAILED
    assert flaky.attempts == 3
    assert [e.exception_class for e in flaky.errors] == [ConnectionError] * 3
    assert "hunter2" not in "".join(e.traceback for e in flaky.errors)  # redacted
    runs = [line for line in lines if line.startswith(f"flaky {item} ")]
    assert runs == [f"flaky {item} attempt={n}" for n in (1, 2, 3)]
    attempts = project.backend(engine_alias).engine().attempts(int(flaky.id))
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "retry"), (2, "retry"), (3, "dead")]
    # Each retry waited the sheet's 1s (the worker records the wait it drew), so it
    # started at least 1s after the attempt before it had started.
    assert project.backend(engine_alias).engine().get(int(flaky.id)).last_delay == 1.0
    gaps = [b.started_at - a.started_at for a, b in itertools.pairwise(attempts)]
    assert len(gaps) == 2
    assert all(gap >= 1.0 for gap in gaps), gaps

    # Fatal: dead at its first attempt of 5.
    forbidden.refresh()
    assert forbidden.status == TaskResultStatus.FAILED
    assert forbidden.attempts == 1
    assert forbidden.errors[0].exception_class is PermissionError
    assert [line for line in lines if line.startswith(f"forbidden {item}")] == [f"forbidden {item}"]
    by_job = {r.body.get("job_id"): r.body for r in hook.received}
    for result, job in ((flaky, "flaky"), (forbidden, "forbidden")):
        assert by_job[int(result.id)]["event"] == "dead"
        assert by_job[int(result.id)]["job"] == job


def test_first_run_with_djangos_connection_makes_a_rerun_after_kill_9_harmless(
    project: Project, engine_alias: str, tmp_path: Any
) -> None:
    from jdproject import tasks

    order = unique()
    result = using(tasks.award, engine_alias).enqueue(order_id=order, points=30)
    marker = tmp_path / "committed"
    first = worker(project, engine_alias, "--lease", "1s", env={"JDPROJECT_HANG": str(marker)})
    try:
        eventually(marker.exists, timeout=60, what="the first attempt's commit")
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the worker and its children, at once
        first.communicate(timeout=30)
    # The attempt committed its points and its key, but never reported back: once its
    # lease expires the next worker reclaims the job and runs it again.
    second = worker(project, engine_alias, "--lease", "1s")
    try:
        eventually(
            lambda: project.backend(engine_alias).engine().get(int(result.id)).state == "done",
            timeout=60,
            what="the re-run",
        )
    finally:
        code, _out, err = stop(second)
    assert code == 0, err
    with connections[engine_alias].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM jdproject_points WHERE order_id = %s", [order])
        assert cursor.fetchone()[0] == 1
    runs = [line for line in project.log_lines() if line.startswith(f"award {order} ")]
    assert runs[0] == f"award {order} done attempt=1"
    assert runs[1:]
    assert all(line.startswith(f"award {order} skipped") for line in runs[1:])
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
