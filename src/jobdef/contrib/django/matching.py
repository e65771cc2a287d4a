"""Which sheet a task runs under, and what its options may change of the sheet's policy.

A task is matched to the sheet whose ``handler`` names it (``module:function``), or to
the sheet its backend's ``OPTIONS["jobs"]`` maps it to by name. The sheet is the
policy: the task's ``queue_name`` and ``priority`` are taken only where they agree with
it (or, for ``priority``, where no sheet or Defaults document writes one); a task option
that differs from a value the sheet writes is an error that names both.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from jobdef.contrib.django.compat import DEFAULT_TASK_PRIORITY, DEFAULT_TASK_QUEUE_NAME, InvalidTask
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry


def handler_path(task: Any) -> str:
    """``module:function`` of a task, as a sheet's ``handler`` names it."""
    return f"{task.func.__module__}:{task.func.__qualname__}"


def dotted_path(task: Any) -> str:
    """``module.function`` of a task, as Django names it (``Task.module_path``)."""
    return f"{task.func.__module__}.{task.func.__qualname__}"


def mapped_name(task: Any, names: Mapping[str, str]) -> str | None:
    """The sheet name ``OPTIONS["jobs"]`` gives the task, under either spelling of its path."""
    return names.get(dotted_path(task)) or names.get(handler_path(task))


def find_policy(registry: Registry, task: Any, names: Mapping[str, str]) -> JobPolicy | None:
    """The policy of the sheet that runs ``task``, or None when no sheet does."""
    name = mapped_name(task, names)
    if name is not None:
        return registry.jobs.get(name)
    wanted = handler_path(task)
    matches = [policy for policy in registry if policy.handler == wanted]
    return matches[0] if matches else None


def missing_sheet(
    task: Any, sheets: list[Path], names: Mapping[str, str], registry: Registry
) -> str:
    """What to write when ``task`` has no sheet: the file, its name and its handler line;
    or, when a sheet of the task's name runs another handler (a sheet just written by
    ``jobdef new``, whose handler is a placeholder), the line to change there."""
    name = mapped_name(task, names)
    folder = sheets[0] if sheets else Path("jobdefs")
    if name is not None:
        return (
            f"task {dotted_path(task)} is mapped to job {name!r} in OPTIONS['jobs'], but no "
            f"sheet under {folder} defines it; write {folder / (name + '.yaml')} with "
            f"`name: {name}` and `handler: {handler_path(task)}`"
        )
    job = task.func.__name__
    namesake = registry.jobs.get(job)
    if namesake is not None:
        where = namesake.origin("handler") or namesake.file
        return (
            f"task {dotted_path(task)} has no sheet: job {job!r} at {where} runs handler "
            f"{namesake.handler}; write `handler: {handler_path(task)}` there if it is this "
            "task's sheet, or map the task to its sheet in OPTIONS['jobs']"
        )
    return (
        f"task {dotted_path(task)} has no sheet; write {folder / (job + '.yaml')} with "
        f"`handler: {handler_path(task)}` (`jobdef new {job} --sheets {folder}` writes one to "
        "fill in), or map the task to an existing sheet in OPTIONS['jobs']"
    )


class JobOptions(NamedTuple):
    """What one enqueue stores besides args: the sheet's queue, a priority, a start time."""

    queue: str
    priority: int
    run_after: float | None


def _where(policy: JobPolicy, field: str) -> str:
    origin = policy.origin(field)
    if origin is None or origin.source == "builtin":
        return f"the sheet of job {policy.name!r}"
    return f"{field} of job {policy.name!r} at {origin}"


def job_options(task: Any, policy: JobPolicy) -> JobOptions:
    """The queue, priority and run_after of one enqueue of ``task`` under ``policy``.

    Raises ``InvalidTask`` naming both values when the task contradicts the sheet.
    """
    if task.queue_name not in (DEFAULT_TASK_QUEUE_NAME, policy.queue):
        raise InvalidTask(
            f"task {dotted_path(task)} has queue_name={task.queue_name!r} but "
            f"{_where(policy, 'queue')} is {policy.queue!r}; the sheet decides the queue: "
            "drop queue_name from @task/.using() or change the sheet's queue"
        )
    priority = policy.priority
    if task.priority not in (DEFAULT_TASK_PRIORITY, policy.priority):
        origin = policy.origin("priority")
        if origin is not None and origin.source != "builtin":
            raise InvalidTask(
                f"task {dotted_path(task)} has priority={task.priority} but "
                f"{_where(policy, 'priority')} is {policy.priority}; drop priority from "
                "@task/.using() or change the sheet's priority"
            )
        priority = int(task.priority)
    run_after = task.run_after
    return JobOptions(policy.queue, priority, None if run_after is None else _epoch(run_after))


def _epoch(moment: datetime) -> float:
    """Epoch seconds; a naive datetime (USE_TZ = False) is in Django's TIME_ZONE."""
    if moment.tzinfo is None:
        from django.utils import timezone

        moment = timezone.make_aware(moment)
    return moment.timestamp()
