"""The task class of :class:`~jobdef.contrib.django.JobdefBackend`: a ``@task`` the worker can call.

A sheet's ``handler`` names the ``@task`` (``reservations.tasks:send_confirmation``), so
the worker imports the task object itself. jobdef calls a handler as
``handler(ctx, **args)``; :class:`JobdefTask` takes that call and runs the task's
function as Django defines it: ``func(**args)``, or ``func(context, **args)`` for a task
with ``takes_context=True``, whose ``context`` is :class:`JobContext`, jobdef's
:class:`~jobdef.runtime.context.Context` that also answers Django's ``task_result``.

A task without ``takes_context`` reads the running attempt with :func:`current_context`.

Around the function's call the framework's ``task_started`` and ``task_finished`` are
sent, in the process that runs it (:mod:`jobdef.contrib.django.signals`).
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import fields
from typing import Any

from django.db import close_old_connections

from jobdef.contrib.django.compat import Task
from jobdef.contrib.django.signals import Attempt
from jobdef.errors import ArgsError, UsageError
from jobdef.runtime.context import Context

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


class JobContext(Context):
    """jobdef's context, given as ``context`` to a ``@task(takes_context=True)``.

    It has what Django's ``TaskContext`` has (``attempt``, ``task_result``) and what a
    jobdef handler has (``job_id``, ``idempotency_key``, ``heartbeat``, ``logger``...),
    so ``first_run(context, connection)`` works on it.
    """

    _backend: str = "default"

    @classmethod
    def of(cls, ctx: Context, backend: str) -> JobContext:
        made = cls(**{f.name: getattr(ctx, f.name) for f in fields(ctx) if f.init})
        made._backend = backend
        return made

    @property
    def task_result(self) -> Any:
        """This job's ``TaskResult``, read from the job store (status RUNNING)."""
        from jobdef.contrib.django.compat import task_backends
        from jobdef.contrib.django.serving import backend_for

        backend = backend_for(self.database_url, self._backend)
        if backend is None:  # a store no backend names (a test's): the task's own backend
            backend = task_backends()[self._backend]
        return backend.get_result(str(self.job_id))


def _own_parameters(func: Callable[..., Any], takes_context: bool) -> list[inspect.Parameter]:
    params = list(inspect.signature(func).parameters.values())
    return params[1:] if takes_context and params else params


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
        ``jobdef validate --check-imports`` compare with the sheet's args."""
        ctx = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_ONLY)
        return inspect.Signature([ctx, *_own_parameters(self.func, self.takes_context)])

    def __call__(self, ctx: Context, /, **args: Any) -> Any:
        target = _target(self, ctx)
        signals = Attempt(self, ctx)
        if inspect.iscoroutinefunction(self.func):
            signals.started()  # here, not in the coroutine: it reads the store
            return _async_call(target, ctx, args, signals)
        token = _current.set(ctx)
        close_old_connections()  # as a request does: drop connections gone bad or too old
        try:
            signals.started()
            try:
                value = target(**args)
            except BaseException as exc:
                signals.raised(exc)
                raise
            signals.returned(value)
            return value
        finally:
            _current.reset(token)
            close_old_connections()


def _target(task: Any, ctx: Context) -> Callable[..., Any]:
    func: Callable[..., Any] = task.func
    if not task.takes_context:
        return func
    context = JobContext.of(ctx, task.backend)

    def with_context(**args: Any) -> Any:
        return func(context, **args)

    return with_context


def _async_call(
    target: Callable[..., Any], ctx: Context, args: Mapping[str, Any], signals: Attempt
) -> Coroutine[Any, Any, Any]:
    from asgiref.sync import sync_to_async

    async def run() -> Any:
        token = _current.set(ctx)  # set inside the coroutine: it runs in its own context
        try:
            try:
                value = await target(**args)
            except BaseException as exc:
                # Receivers run outside the event loop, where the ORM may be used.
                await sync_to_async(signals.raised)(exc)
                raise
            await sync_to_async(signals.returned)(value)
            return value
        finally:
            _current.reset(token)

    return run()


def named_args(task: Any, args: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The call ``task.enqueue(*args, **kwargs)`` as the args of a job: by name, as a
    sheet declares them (positional ones take the names of the function's parameters)."""
    params = _own_parameters(task.func, task.takes_context)
    signature = inspect.Signature(params)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise ArgsError(
            f"{task.module_path}.enqueue(): {exc}; call it as the function is defined. "
            "Nothing was stored"
        ) from None
    named: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise ArgsError(
                    f"{task.module_path}.enqueue(): *{name} cannot be stored as a job's args, "
                    "which have names; pass them by keyword. Nothing was stored"
                )
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return named
