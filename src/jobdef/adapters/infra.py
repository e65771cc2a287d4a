"""What the sheets need of a runtime's infrastructure, checked against the live one.

``jobdef check --runtime ... --app module:obj`` imports the application's object
(a configured Celery app, or a :class:`~jobdef.adapters.rq.SheetQueue`) and asks:

- Celery: is the app configured for jobdef, does the run store answer, and does
  the broker's ``visibility_timeout`` (Redis, SQS) outlast the worst timeout
  plus the longest countdown of the sheets (else a held retry is delivered twice)?
- RQ: does the SheetQueue's own Redis connection answer, does every sheet's queue
  have a worker, and does one of them run the scheduler (retries with a wait need it)?

Each problem is one line saying what to change.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jobdef.errors import UsageError
from jobdef.policy.backoff import delay_range
from jobdef.policy.durations import format_duration
from jobdef.policy.model import JobPolicy
from jobdef.redact import redact


def load_object(spec: str) -> Any:
    """``module:attribute`` imported from the current folder and the path."""
    module, sep, attribute = spec.partition(":")
    if not sep or not module or not attribute:
        raise UsageError(f"--app {spec!r}: write module:attribute, e.g. --app shop.tasks:app")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        found = importlib.import_module(module)
    except SystemExit as exc:
        raise UsageError(
            f"--app {spec!r}: importing {module} called sys.exit({redact(str(exc.code))})"
        ) from None
    except Exception as exc:  # the application's import may fail in any way
        raise UsageError(f"--app {spec!r}: importing {module} failed: {redact(str(exc))}") from None
    obj = found
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"--app {spec!r}: {module} has no {attribute}") from None
    return obj


def longest_countdown(job: JobPolicy) -> float:
    """The longest wait a retry of ``job`` is held for, in seconds."""
    return max((delay_range(job.backoff, n)[1] for n in range(1, job.max_attempts)), default=0.0)


def _ping(url: str) -> str | None:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except Exception as exc:  # any failure to reach it is the finding
        return f"the run store at {redact(url)} does not answer: {redact(str(exc))}"
    return None


def celery_problems(app: Any, jobs: Sequence[JobPolicy]) -> list[str]:
    from jobdef.adapters.celery import SheetTask, settings_of, visibility_timeout

    # The sheets the app has tasks for, when it has any yet (tasks may register late).
    served = {
        task.jobdef_job or task.name
        for task in getattr(app, "tasks", {}).values()
        if isinstance(task, SheetTask)
    }
    jobs = [job for job in jobs if job.name in served] or list(jobs)
    problems: list[str] = []
    try:
        settings = settings_of(app)
    except UsageError as exc:
        return [exc.message if hasattr(exc, "message") else str(exc)]
    if (problem := _ping(settings.redis)) is not None:
        problems.append(problem)
    limit = visibility_timeout(app)
    if limit is not None and jobs:
        worst = max(jobs, key=lambda j: j.timeout + longest_countdown(j))
        need = worst.timeout + longest_countdown(worst)
        if limit <= need:
            problems.append(
                f"the broker's visibility_timeout is {format_duration(limit)}, not longer than "
                f"{worst.name}'s timeout plus its longest countdown ({format_duration(need)}): "
                "the broker would deliver a held retry a second time; raise "
                "broker_transport_options['visibility_timeout'] above it"
            )
    return problems


def rq_problems(target: Any, jobs: Sequence[JobPolicy]) -> list[str]:
    from rq import Queue, Worker

    from jobdef.adapters.rq import SheetQueue

    if not isinstance(target, SheetQueue):
        return [f"--app must name a jobdef.adapters.rq.SheetQueue, not {type(target).__name__}"]
    connection = target.connection
    try:
        connection.ping()
    except Exception as exc:  # any failure to reach it is the finding
        return [f"the SheetQueue's Redis does not answer: {redact(str(exc))}"]
    problems: list[str] = []
    for name in sorted({job.queue for job in jobs}):
        queue = Queue(name, connection=connection)
        if not Worker.all(connection=connection, queue=queue):
            problems.append(
                f"no RQ worker listens on queue {name!r}: start "
                f"`rq worker --with-scheduler -w jobdef.adapters.rq.SheetWorker {name}`"
            )
            continue
        waits = any(job.max_attempts > 1 for job in jobs if job.queue == name)
        if waits and not connection.exists(f"rq:scheduler-lock:{name}"):
            problems.append(
                f"no RQ worker on queue {name!r} runs the scheduler, so retries after a wait "
                "never start: start one with --with-scheduler"
            )
    return problems
