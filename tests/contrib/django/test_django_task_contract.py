"""Where JobdefBackend keeps the framework's contract: args as passed, a ``TypeError``
for args and return values that are not JSON, a real ``TaskContext``, a queue no sheet
names refused by ``using()``, a deferred task's ``run_after``.

On SQLite and on PostgreSQL, with real workers where a task must run.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jd_support import Project, drain, unique

from jobdef.contrib.django.compat import PACKAGE, InvalidTask, TaskContext, TaskResultStatus
from jobdef.errors import ArgsError


def using(task: Any, alias: str, **options: Any) -> Any:
    return task.using(backend=alias, **options)


def cancel(project: Project, alias: str, *results: Any) -> None:
    """Cancel jobs a test made only to read back: no later test's worker runs them."""
    engine = project.backend(alias).engine()
    for result in results:
        assert engine.cancel(int(result.id))


@pytest.mark.slow
def test_positional_args_are_given_back_and_star_args_checked_by_the_sheet(
    project: Project, engine_alias: str
) -> None:
    """``*counts`` is stored as the sheet's list ``counts``, checked item by item; the
    result gives back the call, and the worker calls the function with it."""
    from jdproject import tasks

    label = f"run-{unique()}"
    result = using(tasks.tally, engine_alias).enqueue(1, 2, 4, label=label)
    assert result.args == [1, 2, 4]
    assert result.kwargs == {"label": label}
    record = project.backend(engine_alias).engine().get(int(result.id))
    assert dict(record.args) == {"counts": [1, 2, 4], "label": label}
    fetched = tasks.tally.using(backend=engine_alias).get_result(result.id)
    assert (fetched.args, fetched.kwargs) == ([1, 2, 4], {"label": label})

    with pytest.raises(ArgsError, match=r"args\.counts\[1\]"):
        using(tasks.tally, engine_alias).enqueue(1, "two")

    drain(project, engine_alias)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"label": label, "total": 7}


@pytest.mark.slow
def test_the_call_is_given_back_as_it_was_made(project: Project, engine_alias: str) -> None:
    """The job's args are by name, as the sheet declares them; the result gives back the
    args passed by position by position, from ``enqueue()`` (inside and outside a
    transaction), ``get_result()`` and ``refresh()`` after the worker ran it."""
    from django.db import transaction
    from jdproject import tasks

    report = using(tasks.report, engine_alias)
    made = []
    for by_position, by_name in (([2], {"size": 3}), ([2, 3], {}), ([], {"item": 2, "size": 3})):
        item = unique()
        args = [item, *by_position[1:]] if by_position else []
        kwargs = by_name if by_position else {**by_name, "item": item}
        expected = (args, kwargs)
        result = report.enqueue(*args, **kwargs)
        assert (result.args, result.kwargs) == expected
        record = project.backend(engine_alias).engine().get(int(result.id))
        assert dict(record.args) == {"item": item, "size": 3}
        fetched = report.get_result(result.id)
        assert (fetched.args, fetched.kwargs) == expected
        assert fetched == result
        made.append((result, expected))
    with transaction.atomic(using=engine_alias):
        inside = report.enqueue(unique(), 3)
        assert inside.args == [int(inside.args[0]), 3]
        assert inside.kwargs == {}
    assert report.get_result(inside.id) == inside  # enqueued_at too: the time stamped
    drain(project, engine_alias)
    for result, expected in made:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert (result.args, result.kwargs) == expected


def test_args_that_are_not_json_raise_a_type_error(project: Project, engine_alias: str) -> None:
    from jdproject import tasks

    with pytest.raises(TypeError) as raised:
        using(tasks.ping, engine_alias).enqueue(item=datetime.now(tz=UTC))
    assert isinstance(raised.value, ArgsError)  # and a ValueError, as jobdef's always was
    assert isinstance(raised.value, ValueError)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("job 'ping': args.item is a datetime, which is not JSON")
    # and the framework's words, as its own backends raise them
    assert message.endswith(f"({PACKAGE}: Unsupported type: <class 'datetime.datetime'>)")
    with pytest.raises(TypeError) as raised:
        using(tasks.tally, engine_alias).enqueue(1, {2})
    assert str(raised.value).endswith(f"({PACKAGE}: Unsupported type: <class 'set'>)")
    with pytest.raises(TypeError) as raised:  # JSON, but not the sheet's: jobdef's words only
        using(tasks.tally, engine_alias).enqueue(1, "two")
    assert "Unsupported" not in str(raised.value)
    with pytest.raises(TypeError, match=r"missing a required argument: 'item'"):
        using(tasks.ping, engine_alias).enqueue(items=1)


@pytest.mark.slow
def test_a_return_value_that_is_not_json_fails_the_attempt_with_a_type_error(
    project: Project, engine_alias: str
) -> None:
    """The sheet lists TypeError as fatal: FAILED after one attempt, as the framework's
    backends record it."""
    from jdproject import tasks

    result = using(tasks.unstorable, engine_alias).enqueue(unique())
    drain(project, engine_alias)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 1
    [error] = result.errors
    assert error.exception_class is TypeError
    assert "jdproject.tasks.unstorable returned a set and it is not JSON" in error.traceback
    # and the framework's words, as its own backends record them
    assert f"({PACKAGE}: Unsupported type: <class 'set'>)" in error.traceback
    with pytest.raises(ValueError, match="failed"):
        _ = result.return_value


@pytest.mark.slow
def test_a_task_that_takes_context_gets_a_task_context(project: Project, engine_alias: str) -> None:
    from jdproject import tasks

    result = using(tasks.introspect, engine_alias).enqueue()
    drain(project, engine_alias)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert result.return_value == {"task_context": True, "attempt": 1, "result_id": result.id}


def test_a_queue_no_sheet_names_is_refused_at_using(project: Project, engine_alias: str) -> None:
    """Without QUEUES the sheets' queues are the valid ones: another is refused by
    ``using()``, with the framework's message, as a queue QUEUES does not list is."""
    from jdproject import tasks

    with pytest.raises(InvalidTask, match=r"^Queue 'nope' is not valid for backend\. ") as refused:
        using(tasks.flaky, engine_alias, queue_name="nope")
    assert "has queue_name='nope' but the sheet of job 'flaky' is 'default'" in str(refused.value)


def test_a_queue_of_another_sheet_is_refused_at_enqueue(
    project: Project, engine_alias: str
) -> None:
    """The sheet decides the queue: ``using()`` takes a queue a sheet names, as the
    framework's backends take one of QUEUES; ``enqueue()`` runs the task only on its own
    sheet's queue, naming both."""
    from jdproject import tasks

    elsewhere = using(tasks.flaky, engine_alias, queue_name="mail")  # flaky's sheet: default
    assert elsewhere.queue_name == "mail"
    with pytest.raises(InvalidTask, match="the sheet decides the queue"):
        elsewhere.enqueue(item=unique())
    same = using(tasks.send_confirmation, engine_alias, queue_name="mail")
    result = same.enqueue(unique())
    assert result.task.queue_name == "mail"
    cancel(project, engine_alias, result)


def test_get_result_of_a_deferred_task_has_its_run_after(
    project: Project, engine_alias: str
) -> None:
    from jdproject import tasks

    later = datetime.now(tz=UTC).replace(microsecond=0) + timedelta(minutes=5)
    deferred = using(tasks.flaky, engine_alias, run_after=later).enqueue(item=unique())
    fetched = using(tasks.flaky, engine_alias).get_result(deferred.id)
    assert fetched.task.run_after == later
    assert deferred.task.run_after == later
    assert fetched == deferred
    now = using(tasks.flaky, engine_alias).enqueue(item=unique())
    assert using(tasks.flaky, engine_alias).get_result(now.id).task.run_after is None
    cancel(project, engine_alias, deferred, now)


def test_job_context_is_a_task_context(project: Project) -> None:
    """What a ``takes_context`` task receives is Django's ``TaskContext`` class too."""
    from jobdef.contrib.django import JobContext

    assert issubclass(JobContext, TaskContext)
