"""``JobdefBackend``: Django's tasks framework over jobdef, with the sheets as the policy.

::

    TASKS = {
        "default": {
            "BACKEND": "jobdef.contrib.django.JobdefBackend",
            "OPTIONS": {"sheets": BASE_DIR / "jobdefs"},
        }
    }

``enqueue`` finds the task's sheet, validates the args against it, computes the
idempotency key and writes the job on Django's own connection to the database
``OPTIONS["database"]`` (default ``"default"``), inside the caller's
``transaction.atomic()`` when there is one: the job exists if and only if that
transaction commits. Retries, timeouts, dead letters and notifications are the
sheet's, run by ``manage.py jobdef_worker``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import AttemptRecord, JobRecord
from jobdef.contrib.django.calls import TaskArgsError, job_args, passed_by_position, refused
from jobdef.contrib.django.compat import (
    DEFAULT_TASK_QUEUE_NAME,
    BaseTaskBackend,
    InvalidTask,
    TaskResultDoesNotExist,
    task_enqueued,
)
from jobdef.contrib.django.matching import find_policy, job_options, missing_sheet
from jobdef.contrib.django.results import task_result
from jobdef.contrib.django.store import store_url
from jobdef.contrib.django.task import JobdefTask
from jobdef.errors import ArgsError, BackendError
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from jobdef.telemetry import enqueues

# One engine per store and one registry per sheets folder in a process: Django makes a
# backend object per thread, and each would otherwise open its own connection.
_engines: dict[str, Backend] = {}
_registries: dict[tuple[str, ...], Registry] = {}
_lock = threading.Lock()


def _paths(value: Any) -> list[Path]:
    if value is None:
        return [Path("jobdefs")]
    if isinstance(value, str | Path):
        return [Path(value)]
    return [Path(item) for item in value]


class JobdefBackend(BaseTaskBackend):  # type: ignore[misc]  # Django ships no types
    """Run ``@task`` functions as jobdef jobs whose policy comes from their sheets.

    ``OPTIONS``: ``sheets`` (a folder or a list, default ``jobdefs``), ``database``
    (the ``DATABASES`` alias that holds the jobs, default ``"default"``), ``schema``
    (PostgreSQL schema of jobdef's tables, default ``public``), ``jobs`` (task path →
    sheet name, for a task whose sheet's ``handler`` names it by another path).
    """

    task_class = JobdefTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        # Without QUEUES, the queues a task may name are those of the sheets, which are
        # read when a task is first checked (validate_task), not here: a sheet's error
        # must not break the import of every module that defines a task.
        self.queues_given = "QUEUES" in params
        if not self.queues_given:
            self.queues: set[str] = set()
        options = self.options
        self.sheets = _paths(options.get("sheets"))
        self.database = str(options.get("database", "default"))
        self.schema: str | None = options.get("schema")
        self.names: dict[str, str] = dict(options.get("jobs", {}))

    # -- what the backend is made of ------------------------------------------------

    @property
    def database_url(self) -> str:
        """jobdef's URL for the database the jobs are written to."""
        if self.database not in connections.settings:
            raise ImproperlyConfigured(
                f"TASKS[{self.alias!r}] OPTIONS['database'] is {self.database!r}, which "
                "DATABASES does not define"
            )
        return store_url(self.database, connections.settings[self.database], self.schema)

    @property
    def registry(self) -> Registry:
        """The sheets, loaded once per process (a sheet with an error raises SheetError)."""
        key = tuple(str(path.resolve()) for path in self.sheets)
        with _lock:
            if key not in _registries:
                _registries[key] = load_registry(self.sheets)
            return _registries[key]

    def engine(self) -> Backend:
        """jobdef's engine on the same database: it reads, requeues and resolves jobs."""
        url = self.database_url
        with _lock:
            if url not in _engines:
                try:
                    _engines[url] = open_backend(url, create=False, migrate=True)
                except BackendError as exc:
                    raise BackendError(
                        f"{exc} (in a Django project, `python manage.py migrate` creates and "
                        "upgrades jobdef's tables)"
                    ) from None
            return _engines[url]

    def migrate(self) -> None:
        """Create or upgrade jobdef's tables in the database (``manage.py migrate`` does)."""
        open_backend(self.database_url, create=True, migrate=True).close()

    def queues_named(self) -> set[str]:
        """The queues the sheets name, and the framework's default queue name (a task's
        ``queue_name`` when it gives none: the sheet's queue, then)."""
        return {DEFAULT_TASK_QUEUE_NAME, *(policy.queue for policy in self.registry)}

    def policy(self, task: Any) -> JobPolicy:
        """The sheet's policy for ``task``; ``InvalidTask`` saying what to write if none."""
        found = find_policy(self.registry, task, self.names)
        if found is None:
            raise InvalidTask(missing_sheet(task, self.sheets, self.names, self.registry))
        return found

    # -- the framework's verbs ----------------------------------------------------------

    def check_queue(self, task: Any) -> None:
        """Without ``QUEUES``, refuse a ``queue_name`` no sheet names, with the
        framework's message, where it is written (``.using()``) and at ``enqueue()``.
        ``@task`` does not ask, so a module with a wrong task still imports and
        ``manage.py check`` names it; a queue another sheet names is refused by
        ``enqueue()``, naming both (the task's sheet decides its queue)."""
        if self.queues_given or task.queue_name == DEFAULT_TASK_QUEUE_NAME:
            return
        named = self.queues_named()
        if task.queue_name in named:
            return
        detail = (
            f"the sheets of TASKS[{self.alias!r}] name the queues {', '.join(sorted(named))}; "
            "a task runs on its sheet's queue"
        )
        policy = find_policy(self.registry, task, self.names)
        if policy is not None:
            try:
                job_options(task, policy)
            except InvalidTask as exc:  # names both queues, and the sheet's line
                detail = str(exc)
        raise InvalidTask(f"Queue {task.queue_name!r} is not valid for backend. {detail}")

    def enqueue(self, task: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        self.validate_task(task)
        policy = self.policy(task)
        self.check_queue(task)
        options = job_options(task, policy)
        engine = self.engine()
        try:
            new = Queue(engine, self.registry).new_job(
                policy.name,
                job_args(task, args, kwargs),
                run_after=options.run_after,
                priority=options.priority,
            )
        except TaskArgsError:
            raise
        except ArgsError as exc:  # a TypeError too, as the framework raises for bad args
            raise refused(exc, args, kwargs) from None
        # How the call was spelled, so the result gives it back as it was made.
        new = dataclasses.replace(new, positional_args=passed_by_position(task, args))
        connection = connections[self.database]
        if connection.in_atomic_block:
            [stored] = self._write(engine, connection, new)
        else:  # one transaction of its own, as a statement outside atomic() would be
            with transaction.atomic(using=self.database):
                [stored] = self._write(engine, connection, new)
        # Counted as Queue.enqueue counts (jobdef_jobs_enqueued_total and the
        # deduplicated counter), in this process; inside the caller's transaction, when
        # the job is written, as a Queue.enqueue(connection=...) is.
        enqueues.count(new.job, new.queue, [stored])
        record, attempts = self._read(engine, stored.id)
        if record is None:  # pragma: no cover - just written, or the job it was merged into
            raise TaskResultDoesNotExist(str(stored.id))
        result = task_result(task, record, attempts, self.alias, created=stored.created)
        task_enqueued.send(type(self), task_result=result)
        return result

    def _write(self, engine: Backend, connection: Any, new: Any) -> list[Any]:
        connection.ensure_connection()
        return engine.enqueue([new], connection=connection.connection)

    def _read(self, engine: Backend, job_id: int) -> tuple[JobRecord | None, list[AttemptRecord]]:
        """A job and its attempts as the caller sees them: inside ``transaction.atomic()``
        (a request's, a ``TestCase``'s) on Django's connection, in that transaction, where
        a job enqueued in it is before it commits (jobdef's own connection sees it only
        then); else on jobdef's own connection."""
        connection = connections[self.database]
        if connection.in_atomic_block:
            connection.ensure_connection()
            return engine.get_on(connection.connection, job_id)
        return engine.get(job_id), engine.attempts(job_id)

    def get_result(self, result_id: str) -> Any:
        try:
            job_id = int(result_id)
        except (TypeError, ValueError):
            raise TaskResultDoesNotExist(result_id) from None
        if not 1 <= job_id < 2**63:
            raise TaskResultDoesNotExist(result_id)
        record, attempts = self._read(self.engine(), job_id)
        if record is None:
            raise TaskResultDoesNotExist(result_id)
        return task_result(self._task_of(record.job), record, attempts, self.alias)

    def _task_of(self, job: str) -> Any:
        """The task object a job's sheet names, for ``TaskResult.task``."""
        from jobdef.sheets.rules.imports import resolve

        policy = self.registry.jobs.get(job)
        if policy is not None:
            module, _, attribute = policy.handler.partition(":")
            found, _problem = resolve(module, attribute)
            if isinstance(found, JobdefTask):
                return found
            if callable(found):
                return self.task_class(func=found, backend=self.alias)
        raise TaskResultDoesNotExist(f"job {job!r} is not a task of this backend's sheets")

    def check(self, **kwargs: Any) -> Iterable[Any]:
        from jobdef.contrib.django.checks import backend_messages

        yield from super().check(**kwargs)
        yield from backend_messages(self, configured_backends())


def configured_backends() -> list[JobdefBackend]:
    """The backends of ``TASKS`` that are jobdef's, in the order they are configured (one
    that cannot be loaded is none of jobdef's: the framework raises where it is used)."""
    from jobdef.contrib.django.compat import InvalidTaskBackend, task_backends

    handler = task_backends()
    found = []
    for alias in handler.settings:
        try:
            found.append(handler[alias])
        except InvalidTaskBackend:
            continue
    return [backend for backend in found if isinstance(backend, JobdefBackend)]


def close_engines() -> None:
    """Close the engines this process opened, and so their connections; the next use of a
    backend opens its engine again.

    PostgreSQL drops no database another session is connected to: Django's test runner,
    which drops its test database after the tests, needs jobdef's own connections to it
    closed first (:func:`jobdef.contrib.django.apps.close_before_create_or_drop`).
    """
    with _lock:
        opened = list(_engines.values())
        _engines.clear()
    for engine in opened:
        engine.close()
