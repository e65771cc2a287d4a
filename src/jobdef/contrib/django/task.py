"""The task class of :class:`~jobdef.contrib.django.JobdefBackend`: a ``@task`` the worker can call.

A sheet's ``handler`` names the ``@task`` (``reservations.tasks:send_confirmation``), so
the worker imports the task object itself. jobdef calls a handler as
``handler(ctx, **args)``; :class:`JobdefTask` takes that call and runs the task's
function as Django defines it: ``func(*args, **kwargs)``, or ``func(context, *args,
**kwargs)`` for a task with ``takes_context=True``, whose ``context`` is
:class:`JobContext`, jobdef's :class:`~jobdef.runtime.context.Context` that is also
Django's ``TaskContext``. A job's args are named, as its sheet declares them
(:mod:`jobdef.contrib.django.calls`).

A return value that is not JSON fails the attempt with a ``TypeError``, which the
sheet's ``errors`` classify as any other.

A task without ``takes_context`` reads the running attempt with :func:`current_context`.

Around the function's call the framework's ``task_started`` and ``task_finished`` are
sent, in the process that runs it (:mod:`jobdef.contrib.django.signals`).
"""

from __future__ import annotations

import contextvars
import inspect
import sys
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import fields
from typing import Any

from django.db import close_old_connections

from jobdef.contrib.django.calls import as_named, call_of, framework_words, own_parameters
from jobdef.contrib.django.compat import Task, TaskContext
from jobdef.contrib.django.signals import Attempt
from jobdef.errors import UsageError
from jobdef.runtime.context import Context
from jobdef.runtime.payloads import MAX_RESULT_DEPTH, RefusedPayload, json_text

_current: contextvars.ContextVar[Context | None] = contextvars.ContextVar(
    "jobdef_django_context", default=None
)


def current_context() -> Context:
    """The jobdef context of the attempt this code runs in (inside a worker's handler)."""
    ctx = _current.get()
    if ctx is None:
        raise UsageError(
            "current_context() is only set while the jobdef worker runs a task; "
            "use @task(takes_context=True) to receive it as the first argument"
        )
    return ctx


class JobContext(Context, TaskContext):  # type: ignore[misc]  # Django ships no types
    """jobdef's context, given as ``context`` to a ``@task(takes_context=True)``.

    It is a Django ``TaskContext`` (``attempt``, ``task_result``) and what a jobdef
    handler has (``job_id``, ``idempotency_key``, ``heartbeat``, ``logger``...), so
    ``first_run(context, connection)`` works on it.
    """

    # TaskContext is a frozen dataclass; this one is jobdef's mutable Context.
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__

    _backend: str = "default"

    @classmethod
    def of(cls, ctx: Context, backend: str) -> JobContext:
        made = cls(**{f.name: getattr(ctx, f.name) for f in fields(ctx) if f.init})
        made._backend = backend
        return made

    @property  # TaskContext's reads task_result.attempts
    def attempt(self) -> int:
        """This attempt's number (1 for the first): the job's attempt count, this one in."""
        value: int = self.__dict__["attempt"]
        return value

    @attempt.setter
    def attempt(self, value: int) -> None:
        self.__dict__["attempt"] = value

    @property
    def task_result(self) -> Any:
        """This job's ``TaskResult``, read from the job store (status RUNNING)."""
        from jobdef.contrib.django.compat import task_backends
        from jobdef.contrib.django.serving import backend_for

        backend = backend_for(self.database_url, self._backend)
        if backend is None:  # a store no backend names (a test's): the task's own backend
            backend = task_backends()[self._backend]
        return backend.get_result(str(self.job_id))


# Every task made on a jobdef backend in this process, by (module, name, backend alias):
# what `manage.py check` matches against the sheets.
made: dict[tuple[str, str, str], Any] = {}


class JobdefTask(Task):  # type: ignore[misc]  # Django ships no types
    """A Django ``Task`` that jobdef's worker calls as ``task(ctx, **args)``."""

    __slots__ = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        made.setdefault((self.func.__module__, self.func.__qualname__, self.backend), self)

    @property
    def __signature__(self) -> inspect.Signature:
        """``(ctx, <the function's parameters>)``: what the worker's start check and
        ``jobdef validate --check-imports`` compare with the sheet's args. The worker
        passes every arg by name, a ``*args`` parameter's list too (:func:`job_args`), so
        here ``*args`` is the keyword ``args`` and a positional-only one takes its name."""
        ctx = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_ONLY)
        params = own_parameters(self.func, self.takes_context)
        return inspect.Signature([ctx, *map(as_named, params)])

    def using(self, **changes: Any) -> Any:
        """The framework's ``using()``, and a ``queue_name`` no sheet names refused here,
        where it is written (:meth:`JobdefBackend.check_queue`)."""
        made = super().using(**changes)
        check = getattr(made.get_backend(), "check_queue", None)
        if "queue_name" in changes and check is not None:
            check(made)
        return made

    def __call__(self, ctx: Context, /, **args: Any) -> Any:
        target = _target(self, ctx)
        signals = Attempt(self, ctx)
        if inspect.iscoroutinefunction(self.func):
            signals.started()  # here, not in the coroutine: it reads the store
            return _async_call(self, target, ctx, args, signals)
        token = _current.set(ctx)
        close_old_connections()  # as a request does: drop connections gone bad or too old
        try:
            signals.started()
            try:
                value = _returned(self, target(args))
            except BaseException as exc:
                signals.raised(exc)
                raise
            signals.returned(value)
            return value
        finally:
            _current.reset(token)
            close_old_connections()


def _target(task: Any, ctx: Context) -> Callable[[Mapping[str, Any]], Any]:
    """The task's function, called with a job's args as :func:`call_of` spells them."""
    func: Callable[..., Any] = task.func
    first = [JobContext.of(ctx, task.backend)] if task.takes_context else []

    def call(named: Mapping[str, Any]) -> Any:
        positional, keywords = call_of(task, named)
        return func(*first, *positional, **keywords)

    return call


def _returned(task: Any, value: Any) -> Any:
    """``value``, when the job can store it as JSON; else the ``TypeError`` that fails the
    attempt, as the framework's backends record a task whose return value is not JSON
    FAILED. (One its sheet's ``result:`` refuses fails the attempt with
    ``jobdef.ResultRefused``, as any handler's: :mod:`jobdef.runtime.results`.)"""
    if value is None:
        return value
    try:
        json_text(value, max_bytes=sys.maxsize, max_depth=MAX_RESULT_DEPTH)
    except RefusedPayload as exc:
        raise TypeError(
            f"{task.module_path} returned a {type(value).__name__} and {exc}; return plain "
            f"JSON (dict, list, str, int, float, bool or None){framework_words(value)}"
        ) from None
    return value


def _async_call(
    task: Any,
    target: Callable[[Mapping[str, Any]], Any],
    ctx: Context,
    args: Mapping[str, Any],
    signals: Attempt,
) -> Coroutine[Any, Any, Any]:
    from asgiref.sync import sync_to_async

    async def run() -> Any:
        token = _current.set(ctx)  # set inside the coroutine: it runs in its own context
        try:
            try:
                value = _returned(task, await target(args))
            except BaseException as exc:
                # Receivers run outside the event loop, where the ORM may be used.
                await sync_to_async(signals.raised)(exc)
                raise
            await sync_to_async(signals.returned)(value)
            return value
        finally:
            _current.reset(token)

    return run()
