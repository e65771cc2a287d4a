"""``task.enqueue()`` on JobdefBackend, in this process, on SQLite and on PostgreSQL.

The job is written on Django's own connection inside the caller's ``atomic()``: it
exists if and only if that transaction commits. Args are checked against the sheet,
the idempotency key comes from its recipe, and a task option that contradicts the
sheet is refused naming both.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from jd_support import Project, unique

from jobdef.contrib.django.compat import InvalidTask
from jobdef.errors import ArgsError


def jobs_of(project: Project, alias: str, job: str) -> list[Any]:
    return project.backend(alias).engine().list_jobs(job=job, limit=1000)


def confirm(alias: str) -> Any:
    from jdproject import tasks

    return tasks.send_confirmation.using(backend=alias)


def test_rollback_stores_nothing_and_commit_stores_one(project: Project, engine_alias: str) -> None:
    before = len(jobs_of(project, engine_alias, "send_confirmation"))
    with transaction.atomic(using=engine_alias):
        confirm(engine_alias).enqueue(unique())
        transaction.set_rollback(True, using=engine_alias)
    assert len(jobs_of(project, engine_alias, "send_confirmation")) == before

    def failing_view() -> None:
        with transaction.atomic(using=engine_alias):
            confirm(engine_alias).enqueue(unique())
            raise RuntimeError("the view failed after enqueue")

    with pytest.raises(RuntimeError):
        failing_view()
    assert len(jobs_of(project, engine_alias, "send_confirmation")) == before

    reservation = unique()
    with transaction.atomic(using=engine_alias):
        result = confirm(engine_alias).enqueue(reservation)
        # Not committed yet: jobdef's own connection does not see it.
        assert project.backend(engine_alias).engine().get(int(result.id)) is None
    after = jobs_of(project, engine_alias, "send_confirmation")
    assert len(after) == before + 1
    [record] = [r for r in after if r.id == int(result.id)]
    assert dict(record.args) == {"reservation_id": reservation}
    assert record.state == "queued"
    assert record.queue == "mail"  # the sheet's
    assert record.priority == 5  # the sheet's
    assert record.idempotency_key == f"reservation-{reservation}"


def test_inside_atomic_the_result_is_read_back_before_the_commit(
    project: Project, engine_alias: str
) -> None:
    """As in a ``TestCase`` or a view under ATOMIC_REQUESTS: ``get_result()`` and
    ``refresh()`` read what the transaction holds, so the job enqueued in it is there
    (READY) before the commit; rolled back, it never was."""
    from jobdef.contrib.django.compat import TaskResultDoesNotExist, TaskResultStatus

    with transaction.atomic(using=engine_alias):
        result = confirm(engine_alias).enqueue(unique())
        assert project.backend(engine_alias).engine().get(int(result.id)) is None
        assert confirm(engine_alias).get_result(result.id) == result
        result.refresh()
        assert result.status == TaskResultStatus.READY
    assert confirm(engine_alias).get_result(result.id) == result  # the same, committed

    with transaction.atomic(using=engine_alias):
        dropped = confirm(engine_alias).enqueue(unique())
        assert confirm(engine_alias).get_result(dropped.id) == dropped
        transaction.set_rollback(True, using=engine_alias)
    with pytest.raises(TaskResultDoesNotExist):
        confirm(engine_alias).get_result(dropped.id)


def test_enqueue_outside_atomic_commits_on_its_own(project: Project, engine_alias: str) -> None:
    result = confirm(engine_alias).enqueue(reservation_id=unique())
    record = project.backend(engine_alias).engine().get(int(result.id))
    assert record is not None
    assert record.state == "queued"


def test_the_idempotency_key_merges_a_second_enqueue(project: Project, engine_alias: str) -> None:
    reservation = unique()
    first = confirm(engine_alias).enqueue(reservation)
    with transaction.atomic(using=engine_alias):
        second = confirm(engine_alias).enqueue(reservation_id=reservation)
    assert second.id == first.id
    assert [r.id for r in jobs_of(project, engine_alias, "send_confirmation")].count(
        int(first.id)
    ) == 1


def test_a_result_carries_the_jobs_receipt_and_a_merged_enqueue_the_first_jobs(
    project: Project, engine_alias: str
) -> None:
    """The id stays the job's id; ``result.receipt`` is the token a browser may hold, as
    ``Queue.enqueue`` returns it, and it finds the job through a jobdef Queue."""
    from jobdef.backends.records import Receipt
    from jobdef.runtime.queue import Queue

    reservation = unique()
    with transaction.atomic(using=engine_alias):
        first = confirm(engine_alias).enqueue(reservation)
        # Read back in the transaction, before the commit: the same receipt.
        assert confirm(engine_alias).get_result(first.id).receipt.token == first.receipt.token
    second = confirm(engine_alias).enqueue(reservation_id=reservation)
    backend = project.backend(engine_alias)
    record = backend.engine().get(int(first.id))
    assert record is not None
    assert first.receipt == Receipt(int(first.id), record.receipt, created=True)
    assert second.receipt == Receipt(int(first.id), record.receipt, created=False)
    assert first.receipt.token
    assert str(first.receipt) == first.receipt.token
    assert confirm(engine_alias).get_result(first.id).receipt.token == first.receipt.token
    status = Queue(backend.engine(), backend.registry).status(first.receipt.token)
    assert status is not None
    assert (status.job_id, status.state) == (int(first.id), "accepted")


def test_args_that_break_the_sheet_are_refused_and_store_nothing(
    project: Project, engine_alias: str
) -> None:
    before = len(jobs_of(project, engine_alias, "send_confirmation"))
    with pytest.raises(ArgsError, match=r"reservation_id.*send_confirmation.yaml"):
        confirm(engine_alias).enqueue(reservation_id=0)  # minimum: 1
    with pytest.raises(ArgsError, match="missing a required argument: 'reservation_id'"):
        confirm(engine_alias).enqueue(reservation=3)
    from jdproject import tasks

    award = tasks.award.using(backend=engine_alias)
    with pytest.raises(ArgsError, match=r"points.*JSON"):
        award.enqueue(order_id=1, points=object())
    assert len(jobs_of(project, engine_alias, "send_confirmation")) == before


def test_a_queue_that_contradicts_the_sheet_names_both(project: Project) -> None:
    with pytest.raises(InvalidTask) as refused:
        confirm("default").using(queue_name="bulk").enqueue(unique())
    message = str(refused.value)
    assert "queue_name='bulk'" in message
    assert "'mail'" in message
    assert "send_confirmation.yaml:7" in message  # where the sheet writes its queue


def test_a_priority_that_contradicts_the_sheet_names_both(project: Project) -> None:
    with pytest.raises(InvalidTask, match=r"priority=9 .*send_confirmation.yaml:8.* is 5"):
        confirm("default").using(priority=9).enqueue(unique())
    # The sheet's own value is no contradiction.
    assert confirm("default").using(priority=5).enqueue(unique()).task.priority == 5


def test_priority_and_run_after_come_from_the_task_where_the_sheet_is_silent(
    project: Project, engine_alias: str
) -> None:
    from jdproject import tasks

    later = datetime.now(tz=UTC) + timedelta(hours=2)
    result = tasks.flaky.using(backend=engine_alias, priority=-20, run_after=later).enqueue(3)
    record = project.backend(engine_alias).engine().get(int(result.id))
    assert record is not None
    assert record.priority == -20
    assert record.run_after == pytest.approx(later.timestamp(), abs=0.01)
    assert record.queue == "default"  # flaky's sheet leaves the queue at the default


def test_a_task_without_a_sheet_is_refused_at_enqueue_naming_the_sheet(project: Project) -> None:
    from jdproject import orphans

    with pytest.raises(InvalidTask) as refused:
        orphans.rebuild_search_index.enqueue(shard=1)
    message = str(refused.value)
    assert "jdproject.orphans.rebuild_search_index has no sheet" in message
    assert "rebuild_search_index.yaml" in message
    assert "handler: jdproject.orphans:rebuild_search_index" in message


def test_a_rolled_back_savepoint_drops_only_its_own_job(
    project: Project, engine_alias: str
) -> None:
    kept, dropped = unique(), unique()
    with transaction.atomic(using=engine_alias):
        confirm(engine_alias).enqueue(kept)
        with transaction.atomic(using=engine_alias):  # a savepoint
            confirm(engine_alias).enqueue(dropped)
            transaction.set_rollback(True, using=engine_alias)
    stored = {r.args["reservation_id"] for r in jobs_of(project, engine_alias, "send_confirmation")}
    assert kept in stored
    assert dropped not in stored


def test_args_too_large_to_store_are_refused_before_any_engine_sees_them(project: Project) -> None:
    with pytest.raises(ArgsError, match=r"bytes as JSON, more than the \d+ this job allows"):
        confirm("default").enqueue(reservation_id="x" * (2 << 20))
