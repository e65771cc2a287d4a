"""Inside a worker's child process: read batches of tasks, run them, report back.

What the child shares with the worker lives here too: the slots of the shared
block and the lock, so a child imports this module, the messages on the pipe
(:mod:`jobdef.runtime.wire`) and its handlers, not the worker's side
(:mod:`jobdef.runtime.pool` explains the protocol).

A result the child holds back is not lost if the child dies (its own crash, or a
kill at a timeout): before it starts the next task the child writes the sequence
number of the task it finished into the shared block (``FINISHED``), which lives
in the worker's memory and survives the child. A failure, and a return value
other than ``None``, is sent on the pipe before that, so a finished task that the
pipe does not report returned ``None``. The worker therefore never runs a
finished task again, nor loses what it returned.

Coroutine handlers (``async def``) run on one event loop per child, created at the
first one and reused, so clients bound to a loop can be kept between jobs; the
worker's timeout kill applies to them as to any handler. A worker that runs
coroutines side by side (``async_slots`` above 1) starts its children at
:func:`jobdef.runtime.loop_child.run_loop_child` instead, which starts as this one
does (:func:`start_child`).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib
import inspect
import logging
import os
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from jobdef.runtime.classify import class_name, exception_names
from jobdef.runtime.context import Context
from jobdef.runtime.errors import HandlerUnavailable, ResultRefused
from jobdef.runtime.orphan import HOLDINGS
from jobdef.runtime.payloads import (
    MAX_PROGRESS_BYTES,
    MAX_PROGRESS_DEPTH,
    RefusedPayload,
    plain_json,
    truncated,
)
from jobdef.runtime.results import ResultRule, kept_result
from jobdef.runtime.wire import (
    Cancel,
    FromChild,
    Progress,
    Ready,
    Results,
    Stop,
    Task,
    TaskFailed,
    ToChild,
)
from jobdef.telemetry.logs import LogSettings
from jobdef.telemetry.logs import configure as configure_logs
from jobdef.telemetry.traces import attempt_span

if TYPE_CHECKING:
    import asyncio

# Held around every message the child sends to the worker: a handler may beat from a
# thread of its own while the child sends results, and a message over a pipe's buffer
# is written in several parts, which must not interleave.
SENDING = threading.Lock()


def send(conn: Connection, message: FromChild) -> None:
    """Send ``message`` to the worker on ``conn``, whole. Pickled by pickle itself, not by
    ``Connection.send``'s ForkingPickler (a Python pickler made per message, which costs a
    Results of ten tasks 60% more instructions): no message a child sends holds what only
    that pickler reduces (a socket, a file descriptor)."""
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    with SENDING:
        conn.send_bytes(data)


log = logging.getLogger("jobdef.worker")

# Slots of the shared block: the sequence number of the task the child started,
# when it started (time.monotonic, which is system-wide on Linux and macOS), the
# highest sequence number the worker recalled, how many batches the child read, and
# the sequence number of the last task whose handler returned or raised, and until
# when (time.monotonic) the worker vouches for the leases of what it handed the child
# (policy.leases.vouch_span): past that the child starts none of the tasks it holds
# and waits, for the worker to vouch again or to recall them. A worker frozen past its
# lease thus gets no job started whose lease another worker may have reclaimed.
STARTED, STARTED_AT, RECALL, READ, FINISHED, VOUCHED = 0, 1, 2, 3, 4, 5
SLOTS = 6
# How often a child that holds a task its worker no longer vouches for looks again.
VOUCH_POLL = 0.005


def shared_size(async_slots: int) -> int:
    """The slots of a child's shared block: after the six above, a child that runs
    ``async_slots`` coroutines side by side has a pair per coroutine, the sequence number
    of the task it runs (0: free) and when it started (:mod:`jobdef.runtime.loop_child`)."""
    return SLOTS + 2 * async_slots if async_slots > 1 else SLOTS


# How long a child may hold finished results back while it runs the rest of a batch.
_RESULT_DELAY = 0.02


@dataclass(frozen=True, slots=True)
class ChildSettings:
    """What every handler process of one worker starts with.

    ``store_url``: the job store, which handlers see as ``ctx.database_url`` and
    where a child whose worker died gives back what it holds. ``handlers``: imported
    before the first job; ``setup``: ``module:function`` called before them.
    ``worker_id``: the holder its leases name and the worker its log lines name
    (empty: none, and nothing is given back). It logs at ``log_level``, in
    ``log_format`` (``text`` or ``json``), to ``log_file`` if the worker logs to one.
    ``results``: each job's :class:`~jobdef.runtime.results.ResultRule`, by name (a job
    not in it gets the defaults), so a return value is checked, and one its sheet does
    not keep dropped, before it crosses the pipe. ``async_slots``: how many coroutine
    handlers the child runs at once on its event loop (1: one task at a time, whatever
    the handler).
    """

    store_url: str
    handlers: tuple[str, ...] = ()
    setup: str | None = None
    worker_id: str = ""
    log_level: int = logging.WARNING
    log_format: str = "text"
    log_file: str | None = None
    results: Mapping[str, ResultRule] = field(default_factory=dict)
    async_slots: int = 1


class FileLock:
    """An exclusive ``flock`` on an open file, shared by the worker and one child."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


_handlers: dict[str, Callable[..., Any]] = {}


def resolve_handler(path: str) -> Callable[..., Any]:
    """Import ``module:function`` once per process."""
    handler = _handlers.get(path)
    if handler is None:
        module_name, _, attr = path.partition(":")
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        _handlers[path] = handler = target
    return handler


def resolve_task_handler(path: str) -> Callable[..., Any]:
    """The handler at ``path``; one whose module or function is gone raises
    :class:`HandlerUnavailable`: the code changed under the worker, and the worker
    releases the job instead of failing it (:mod:`jobdef.runtime.handlers`)."""
    try:
        return resolve_handler(path)
    except (ImportError, AttributeError) as exc:
        what = f"{class_name(type(exc))}: {exc}"
        raise HandlerUnavailable(f"handler {path} does not import ({what})") from exc


def start_child(
    conn: Connection, shared: Any, lock_path: str, settings: ChildSettings, unhanded: Any = None
) -> FileLock | None:
    """What every child does before its first task: watch the worker, set signals and
    logs up, import the handlers, say Ready. None if the worker is gone already."""
    parent = os.getppid()
    # Should the worker die, what this child holds and has not started goes back to the
    # queue (under the worker's id, which its leases name), with the claims the worker
    # named in ``unhanded`` (no child has them); see runtime.orphan.
    HOLDINGS.watch(settings.worker_id, settings.store_url, RECALL, conn, shared, unhanded=unhanded)
    if os.getppid() != parent:
        return None
    # The worker decides when children stop; a terminal's Ctrl-C or a SIGTERM to the
    # process group must not kill a handler half-way.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logs = LogSettings(settings.log_level, settings.log_format, settings.worker_id or None)
    configure_logs(logs, settings.log_file)
    lock = FileLock(os.open(lock_path, os.O_RDWR))
    if settings.setup is not None:
        # What the handlers' modules need before they import (Django's settings and app
        # registry). A setup that raises ends the child before Ready: the worker sees a
        # child that could not start, rather than jobs failing one by one.
        resolve_handler(settings.setup)()
    for path in settings.handlers:
        # Import before the first job, not during it; a handler that does not import
        # fails its own jobs when they run, with the error.
        with contextlib.suppress(BaseException):
            resolve_handler(path)
    freeze_start()  # the modules, the handlers' and their libraries' objects
    send(conn, Ready(coroutine_handlers(settings.handlers)))
    return lock


def freeze_start() -> None:
    """Leave what this process's start made, which lives as long as the process, out of
    the cyclic collector's scans: each full collection walked all of it while jobs ran
    (5% of a worker's instructions per job in a turn of 256, callgrind). The garbage the
    start left (cycles an import made and dropped) is collected first, or it would stay
    for good. What jobs make is collected as before. Called by each handler process once
    its handlers import, and by the `jobdef worker` process before its loop."""
    gc.collect()
    gc.freeze()


def child_main(
    conn: Connection, shared: Any, lock_path: str, settings: ChildSettings, unhanded: Any = None
) -> None:
    lock = start_child(conn, shared, lock_path, settings, unhanded)
    if lock is None:
        return
    while True:
        try:
            with HOLDINGS.reading:
                message: ToChild = conn.recv()
                HOLDINGS.read(message)
        except (EOFError, OSError):
            HOLDINGS.ended()
            return
        if isinstance(message, Stop):
            return
        if isinstance(message, Cancel):
            continue  # sent only to a child that runs coroutines side by side
        shared[READ] += 1
        pending = _Pending(conn, message.report_every or len(message.tasks))
        for task in message.tasks:
            # Results wait for the batch to end, unless they are as many as the worker
            # asked for or have waited long enough. Sent outside the lock: a send waits
            # while the pipe is full, and the worker takes the lock to recall tasks or
            # to kill, so it must never wait on a pipe.
            if pending.due():
                pending.send()
            # The lock the worker takes to recall or to kill, taken by hand: ``with lock``
            # would cost two Python calls per task.
            while True:
                fcntl.flock(lock.fd, fcntl.LOCK_EX)
                try:
                    with HOLDINGS.guard:
                        now = time.monotonic()
                        held_back = now > shared[VOUCHED] and not given_up(task, shared)
                        start = False
                        if not held_back:
                            start = HOLDINGS.may_start(task.seq, shared[RECALL])
                            if start:
                                shared[STARTED_AT] = now
                                shared[STARTED] = task.seq
                finally:
                    fcntl.flock(lock.fd, fcntl.LOCK_UN)
                if not held_back:
                    break
                if pending:
                    pending.send()
                time.sleep(VOUCH_POLL)
            if not start:
                HOLDINGS.wait_if_orphaned()  # the worker died: this task is given back
                continue
            error, value = _run(task, conn, settings)
            pending.add(task.seq, now, error, value)
            shared[FINISHED] = task.seq
        if pending:
            pending.send()


def given_up(task: Task, shared: Any) -> bool:
    """Whether ``task`` is no longer this child's to start: the worker recalled it, or
    died (the watcher gives it back)."""
    return task.seq <= shared[RECALL] or HOLDINGS.orphaned


class _Pending:
    """The results a child holds back until it sends them as one :class:`Results`: when
    they number ``every``, or the oldest has waited :data:`_RESULT_DELAY`."""

    def __init__(self, conn: Connection, every: int) -> None:
        self.conn = conn
        self.every = every
        self.oldest = 0.0
        # When the last task held ended: the clock of due(), which is asked just after.
        self.latest = 0.0
        self._clear()

    def _clear(self) -> None:
        self.held = 0
        self.done: list[int] = []
        self.failed: list[TaskFailed] = []
        self.elapsed: dict[int, float] = {}
        self.returned: dict[int, str] = {}

    def __len__(self) -> int:
        return self.held

    def due(self) -> bool:
        """Whether the results held are to be sent now."""
        return bool(self.held) and (
            self.held >= self.every or self.latest - self.oldest > _RESULT_DELAY
        )

    def add(self, seq: int, started: float, error: TaskFailed | None, value: str | None) -> None:
        """Task ``seq`` (started at ``started``, monotonic) raised ``error`` or returned
        ``value`` (JSON text, or None)."""
        if not self.held:
            self.oldest = started
        self.held += 1
        self.latest = time.monotonic()
        self.elapsed[seq] = self.latest - started
        if error is None:
            self.done.append(seq)
            if value is not None:
                self.returned[seq] = value
        else:
            self.failed.append(error)
        if error is not None or value is not None:
            # A failure's details and a return value exist only here: on the pipe before
            # FINISHED says the task finished.
            self.send()

    def send(self) -> None:
        send(self.conn, Results(self.done, self.failed, self.elapsed, self.returned or None))
        self._clear()


def run_child(
    conn: Connection, shared: Any, lock_path: str, settings: ChildSettings, unhanded: Any = None
) -> None:
    """A child process's entry: :func:`child_main`; should a send to the worker break
    because the worker died, the tasks not started are given back first."""
    try:
        child_main(conn, shared, lock_path, settings, unhanded)
    except OSError:
        HOLDINGS.ended()
        raise


def coroutine_handlers(paths: tuple[str, ...]) -> frozenset[str]:
    """The handlers among ``paths`` (imported already) that are ``async def``: a function,
    or an object whose ``__call__`` is one."""
    found = set()
    for path in paths:
        handler = _handlers.get(path)
        if handler is None:
            continue
        if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004  # an async __call__, not callable()
        ):
            found.add(path)
    return frozenset(found)


def _run(
    task: Task, conn: Connection, settings: ChildSettings
) -> tuple[TaskFailed | None, str | None]:
    """Run one task's handler: what it raised (or None), and what it returned as JSON
    text (None when it returned None, raised, or its sheet keeps no value). A value the
    sheet refuses fails the attempt with :class:`ResultRefused`."""
    ctx = context(task, conn, settings)
    span = attempt_span(task.job, task.queue, task.job_id, task.attempt, task.trace_context)
    try:
        with span:
            result = resolve_task_handler(task.handler)(ctx, **task.args)
            if result is not None and inspect.isawaitable(result):
                result = event_loop().run_until_complete(result)
    except BaseException as exc:  # a handler's SystemExit is a failed attempt too
        return failed(task.seq, exc), None
    return kept(task, settings, result)


def kept(task: Task, settings: ChildSettings, result: Any) -> tuple[TaskFailed | None, str | None]:
    """What the handler of ``task`` returned, as JSON text if its sheet keeps it; a value
    the sheet refuses is a failure (:class:`ResultRefused`)."""
    if result is None:  # most handlers': nothing to check or send
        return None, None
    rule = settings.results.get(task.job) or _DEFAULT_RULE
    try:
        return None, kept_result(rule, result, task.job_id, task.job, task.attempt)
    except ResultRefused as exc:
        log.warning("%s", exc)
        return failed(task.seq, exc), None


def context(task: Task, conn: Connection, settings: ChildSettings) -> Context:
    """The ``ctx`` the handler of ``task`` gets; its heartbeats go to the worker on
    ``conn``, progress that is not plain JSON dropped with one warning."""

    refused: list[str] = []

    def send_beat(progress: Any) -> None:
        if progress is not None:
            try:
                progress = plain_json(
                    progress, max_bytes=MAX_PROGRESS_BYTES, max_depth=MAX_PROGRESS_DEPTH
                )
            except RefusedPayload as exc:
                if not refused:  # one warning per attempt, however often it beats
                    log.warning(
                        "job %s (%s) attempt %d: progress dropped, %s; "
                        "pass ctx.heartbeat() plain JSON (dict, list, str, number, bool, None)",
                        task.job_id,
                        task.job,
                        task.attempt,
                        exc,
                    )
                refused.append(str(exc))
                progress = None  # the beat still extends the lease
        send(conn, Progress(task.seq, progress))

    # By position, in the order of Context's fields: a call by keyword costs three times
    # as much, and a context is made for every attempt.
    return Context(
        task.job_id,
        task.job,
        task.attempt,
        task.max_attempts,
        task.idempotency_key,
        settings.store_url,
        task.slot,
        task.queue,
        send_beat,
    )


_DEFAULT_RULE = ResultRule()


def failed(seq: int, exc: BaseException) -> TaskFailed:
    """What ``exc`` says, bounded: user code chooses the size of a message."""
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not take the child down
        message = f"<{type(exc).__name__} whose str() raised>"
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:
        text = f"<the traceback of {type(exc).__name__} could not be formatted>"
    return TaskFailed(
        seq,
        class_name(type(exc)),
        truncated(message),
        truncated(text, keep_end=True),
        exception_names(exc),
    )


_loops: list[asyncio.AbstractEventLoop] = []


def event_loop() -> asyncio.AbstractEventLoop:
    """This child's event loop for coroutine handlers: one, reused from job to job.
    asyncio is imported here, at the first: a child that runs only plain functions does
    not pay its import (some 14 ms of CPU) at every start."""
    import asyncio

    if not _loops or _loops[0].is_closed():
        _loops[:] = [asyncio.new_event_loop()]
        asyncio.set_event_loop(_loops[0])
    return _loops[0]
