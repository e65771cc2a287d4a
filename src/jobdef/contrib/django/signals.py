"""The framework's ``task_started`` and ``task_finished``, sent around each attempt.

As Django's own backends send them: in the process that runs the task (the worker's
child process), ``sender`` the backend's class, ``task_result`` the task's
:class:`TaskResult`. ``task_started`` just before the task's function is called, its
result read from the job store (status RUNNING, this attempt counted);
``task_finished`` just after it returned or raised, that result with the outcome:

- returned: SUCCESSFUL, ``finished_at`` now, ``return_value`` what the job will
  store (the return value as JSON; ``None`` when the sheet says ``result.store:
  false``); a value the sheet's ``result:`` refuses (larger than ``max_bytes``, or
  breaking ``result.schema``) is sent as raised, with ``jobdef.ResultRefused``;
- raised: this attempt's error appended to ``errors``; FAILED when the sheet does not
  retry it (a fatal error, or the last attempt), READY when it does (the job is
  ready to be executed again). The worker decides last: a retry whose wait would
  end after the sheet's ``deadline`` buries the job all the same.

``task_finished`` is sent before the worker records the outcome, so the store still
shows the job RUNNING for a moment. An attempt killed at its timeout, or whose process
dies, sends no ``task_finished``. A receiver that raises is logged (its traceback by
Django's ``django.dispatch`` logger, one line naming the job by ``jobdef.worker``) and
changes nothing: the attempt's outcome is the task's, not the receiver's.

Nothing is read from the store when no receiver is connected to either signal (the
framework connects its own, which log each task, so there usually is one). The
job's backend is the one whose store is the worker's (:mod:`.serving`: the same URL,
or another spelling of it that leads to a store holding the same id). When no backend
of ``TASKS`` stores its jobs there (a worker whose ``--db`` names another database, a
``jobdef.testing`` run's own store), nothing can be sent: a receiver would be given a
result no backend can read back. The process logs one WARNING saying so, per store,
with what each backend stores and what to configure.
"""

from __future__ import annotations

import json
import logging
import traceback
from datetime import UTC, datetime
from typing import Any

from jobdef.backends.records import ErrorInfo
from jobdef.contrib.django.compat import TaskResultStatus, task_finished, task_started
from jobdef.runtime.classify import class_name, classify, exception_names
from jobdef.runtime.context import Context
from jobdef.runtime.errors import ResultRefused
from jobdef.runtime.payloads import truncated
from jobdef.runtime.results import kept_result, result_rule

log = logging.getLogger("jobdef.worker")
# The worker stores this process has said it sends no signals for.
_warned: set[str] = set()


class Attempt:
    """The signals of one attempt of ``task``: :meth:`started`, then :meth:`returned` or
    :meth:`raised`."""

    def __init__(self, task: Any, ctx: Context) -> None:
        self.task = task
        self.ctx = ctx
        self.backend: Any = None  # the backend of the worker's store, found at started()
        self.sender: Any = None
        self.result: Any = None
        self._names = {task_started: "task_started", task_finished: "task_finished"}

    def started(self) -> None:
        """Read the task's result and send ``task_started`` (if anyone listens)."""
        if not (task_started.receivers or task_finished.receivers):
            return  # nobody listens to anyone: the store is not read
        from jobdef.contrib.django.serving import backend_for

        # The store the job is in: the worker's, which the task's own alias may not name.
        self.backend = backend_for(self.ctx.database_url, self.task.backend)
        if self.backend is None:
            self._unsent()
            return
        self.sender = type(self.backend)
        if not _listened(self.sender):
            return
        try:
            self.result = self.backend.get_result(str(self.ctx.job_id))
        except Exception as exc:  # the store is out: the task still runs, unsignalled
            log.warning(
                "job %s (%s) attempt %d: task_started and task_finished not sent, the "
                "task's result could not be read: %s",
                self.ctx.job_id,
                self.ctx.job,
                self.ctx.attempt,
                exc,
            )
            return
        self._send(task_started)

    def returned(self, value: Any) -> None:
        if self.result is None:
            return
        # Held to the sheet's `result:` as the worker's child holds it after this.
        rule = result_rule(self.backend.registry.jobs.get(self.ctx.job))
        try:
            text = kept_result(rule, value, self.ctx.job_id, self.ctx.job, self.ctx.attempt)
        except ResultRefused as exc:
            self.raised(exc)
            return
        _set(self.result, status=TaskResultStatus.SUCCESSFUL, finished_at=_now())
        _set(self.result, _return_value=None if text is None else json.loads(text))
        self._send(task_finished)

    def raised(self, exc: BaseException) -> None:
        if self.result is None:
            return
        from jobdef.contrib.django.results import task_error

        error = ErrorInfo(class_name(type(exc)), _message(exc), _traceback(exc))
        self.result.errors.append(task_error(error))
        if self._retried(exc):
            _set(self.result, status=TaskResultStatus.READY)
        else:
            _set(self.result, status=TaskResultStatus.FAILED, finished_at=_now())
        self._send(task_finished)

    def _unsent(self) -> None:
        """Say once per store, when anyone listens, that its jobs send no signals."""
        from jobdef.backends import describe_store
        from jobdef.contrib.django.compat import task_backends
        from jobdef.contrib.django.serving import why_unserved

        url = self.ctx.database_url
        if url in _warned or not _listened(type(task_backends()[self.task.backend])):
            return
        _warned.add(url)
        log.warning(
            "job %s (%s): task_started and task_finished are not sent in this process for "
            "the jobs of %s: no JobdefBackend of TASKS stores its jobs there (%s); run the "
            "worker on a backend's database (`manage.py jobdef_worker` without --db takes "
            "the first JobdefBackend's) or set OPTIONS['database'] of the backend to the "
            "DATABASES alias of this one",
            self.ctx.job_id,
            self.ctx.job,
            describe_store(url),
            "; ".join(why_unserved(url)) or "TASKS has none",
        )

    def _retried(self, exc: BaseException) -> bool:
        """Whether the sheet retries this attempt's error (its deadline aside)."""
        if self.ctx.attempt >= self.ctx.max_attempts:
            return False
        policy = self.backend.registry.jobs.get(self.ctx.job)
        if policy is None:
            return False
        return classify(policy.errors, exception_names(exc)).action != "fatal"

    def _send(self, signal: Any) -> None:
        for receiver, outcome in signal.send_robust(self.sender, task_result=self.result):
            if isinstance(outcome, BaseException):
                # Django's send_robust has logged the traceback (logger django.dispatch).
                log.error(
                    "job %s (%s) attempt %d: a receiver of %s, %s, raised %s: %s; the "
                    "attempt's outcome is the task's",
                    self.ctx.job_id,
                    self.ctx.job,
                    self.ctx.attempt,
                    self._names[signal],
                    _receiver_name(receiver),
                    class_name(type(outcome)),
                    _message(outcome),
                )


def _listened(sender: Any) -> bool:
    return bool(task_started.has_listeners(sender) or task_finished.has_listeners(sender))


def _set(result: Any, **values: Any) -> None:
    """Change a field of a frozen ``TaskResult``, as the framework's backends do."""
    for name, value in values.items():
        object.__setattr__(result, name, value)


def _now() -> datetime:
    return datetime.now(tz=UTC)


def _message(exc: BaseException) -> str:
    try:
        return truncated(str(exc))
    except Exception:
        return f"<{type(exc).__name__} whose str() raised>"


def _traceback(exc: BaseException) -> str:
    try:
        return truncated("".join(traceback.format_exception(exc)), keep_end=True)
    except Exception:
        return ""


def _receiver_name(receiver: Any) -> str:
    name = getattr(receiver, "__qualname__", None) or repr(receiver)
    return f"{getattr(receiver, '__module__', '?')}.{name}"
