"""The persistent pool of child processes that run handlers, with real timeout kills.

Each child is a long-lived process (started once, not once per job) that reads
tasks from its pipe and runs them one at a time. The worker may hand a child
several tasks ahead (``depth``), so the child never waits for a round trip; a
small shared block tells the worker exactly which task the child started and
when, which is what timeouts are measured from.

A task waiting in a child behind a slow one (running longer than
``recall_after``) is *recalled*: under the shared
lock the worker raises ``recall`` above the waiting tasks' sequence numbers and
the child skips them when it reaches them. Because the child marks a task
started under the same lock, a task is either started by the child or recalled
by the worker, never both.

A child that runs past its task's timeout is killed with SIGKILL; a child that
dies (``os._exit``, a segfault, the OOM killer) is noticed through its process
sentinel. Either way a fresh child takes its place and the tasks it had not
started go back to the worker.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from jobdef.backends.base import ErrorInfo
from jobdef.errors import JobdefError
from jobdef.runtime.classify import class_name, exception_names
from jobdef.runtime.context import Context

log = logging.getLogger("jobdef.worker")

_MAX_FAILED_STARTS = 3

# Slots of the shared block: the sequence number of the task the child started,
# when it started (time.monotonic, which is system-wide on Linux and macOS), and
# the highest sequence number the worker recalled.
_STARTED, _STARTED_AT, _RECALL = 0, 1, 2


class PoolError(JobdefError):
    """The worker's child processes cannot start; check how the worker is launched."""


@dataclass(frozen=True, slots=True)
class Task:
    """One attempt for a child to run. ``seq`` is unique within the pool."""

    seq: int
    job_id: int
    attempt: int
    job: str
    handler: str
    args: dict[str, Any]
    idempotency_key: str | None
    max_attempts: int
    timeout: float


@dataclass(frozen=True, slots=True)
class Finished:
    """The handler returned (``error is None``) or raised."""

    task: Task
    error: ErrorInfo | None = None
    error_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Killed:
    """The child running ``task`` was killed at the timeout, or died on its own."""

    task: Task
    timed_out: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Beat:
    """The handler called ``ctx.heartbeat(progress)``."""

    task: Task
    progress: Any


@dataclass(frozen=True, slots=True)
class Returned:
    """A task the pool gives back: recalled before it started, or cut short by a kill of
    its child while another task timed out. The worker runs it again under the same lease."""

    task: Task


Event = Finished | Killed | Beat | Returned


class _Child:
    def __init__(self, ctx: Any, database_url: str, log_level: int) -> None:
        self.shared = ctx.Array("d", [0.0, 0.0, 0.0])
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(
            target=_child_main,
            args=(child_conn, self.shared, database_url, log_level),
            daemon=True,
            name="jobdef-child",
        )
        self.process.start()
        child_conn.close()
        self.tasks: OrderedDict[int, Task] = OrderedDict()

    def started(self) -> tuple[int, float]:
        with self.shared.get_lock():
            return int(self.shared[_STARTED]), self.shared[_STARTED_AT]

    def running(self) -> tuple[Task, float] | None:
        """The task the child is running now, and when it started."""
        seq, at = self.started()
        task = self.tasks.get(seq)
        return (task, at) if task is not None else None

    def recall_waiting(self) -> list[Task]:
        """Take back every task the child has not started yet."""
        if not self.tasks:
            return []
        with self.shared.get_lock():
            self.shared[_RECALL] = max(self.tasks)
            started = int(self.shared[_STARTED])
        waiting = [seq for seq in self.tasks if seq > started]
        return [self.tasks.pop(seq) for seq in waiting]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(5)


class Pool:
    """``size`` children, each taking up to ``depth`` tasks ahead."""

    def __init__(
        self,
        size: int,
        database_url: str,
        *,
        depth: int = 4,
        recall_after: float = 0.5,
        log_level: int = logging.WARNING,
    ) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self.size = size
        self.depth = depth
        self.recall_after = recall_after
        self._database_url = database_url
        self._log_level = log_level
        self._seq = 0
        self._failed_starts = 0
        self.children = [self._spawn() for _ in range(size)]

    def _spawn(self) -> _Child:
        return _Child(self._ctx, self._database_url, self._log_level)

    # -- handing out work -------------------------------------------------------

    def _open(self, now: float) -> list[_Child]:
        """Children that may take more work: idle, or running a task that is not slow."""
        children = []
        for child in self.children:
            running = child.running()
            if running is None or now - running[1] <= self.recall_after:
                children.append(child)
        return children

    def capacity(self) -> int:
        """How many more tasks the children that are not stuck on a slow task can take."""
        return sum(self.depth - len(c.tasks) for c in self._open(time.monotonic()))

    def idle_children(self) -> int:
        return sum(1 for child in self.children if not child.tasks)

    def in_flight(self) -> list[Task]:
        return [task for child in self.children for task in child.tasks.values()]

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def dispatch(self, task: Task) -> None:
        """Send ``task`` to the least busy child (callers check :meth:`capacity` first)."""
        child = min(self._open(time.monotonic()) or self.children, key=lambda c: len(c.tasks))
        child.tasks[task.seq] = task
        child.conn.send(task)

    # -- hearing back -----------------------------------------------------------

    def poll(self, timeout: float) -> list[Event]:
        """Wait up to ``timeout`` for results, then return everything that is ready."""
        by_handle: dict[Any, _Child] = {}
        for child in self.children:
            by_handle[child.conn] = child
            by_handle[child.process.sentinel] = child
        ready = wait(list(by_handle), timeout)
        events: list[Event] = []
        dead: list[_Child] = []
        for handle in ready:
            child = by_handle[handle]
            if handle is child.conn:
                if not self._read(child, events) and child not in dead:
                    dead.append(child)
            elif child not in dead:
                dead.append(child)
        for child in dead:
            self._replace(child, events, timed_out=None)
        return events

    def _read(self, child: _Child, events: list[Event]) -> bool:
        """Read every message waiting on ``child``'s pipe; False when the pipe is closed."""
        try:
            while child.conn.poll():
                message = child.conn.recv()
                kind, seq = message[0], message[1]
                task = child.tasks.get(seq)
                if task is None:
                    continue
                if kind == "beat":
                    events.append(Beat(task, message[2]))
                    continue
                del child.tasks[seq]
                if kind == "ok":
                    events.append(Finished(task))
                else:
                    error = ErrorInfo(message[2], message[3], message[4])
                    events.append(Finished(task, error, tuple(message[5])))
        except (EOFError, OSError):
            return False
        return True

    def enforce(self, now: float | None = None) -> list[Event]:
        """Kill children whose running task passed its timeout; recall work stuck behind
        slow tasks while another child sits idle."""
        now = time.monotonic() if now is None else now
        events: list[Event] = []
        for child in list(self.children):
            running = child.running()
            if running is None:
                continue
            task, started_at = running
            if now - started_at > task.timeout:
                # Its result may have arrived since the last poll: read before judging.
                if self._read(child, events) and task.seq not in child.tasks:
                    continue
                self._replace(child, events, timed_out=task)
            elif now - started_at > self.recall_after and len(child.tasks) > 1:
                events.extend(Returned(t) for t in child.recall_waiting())
        return events

    def next_deadline(self) -> float | None:
        """The monotonic time at which the earliest running task times out."""
        deadlines = []
        for child in self.children:
            running = child.running()
            if running is not None:
                deadlines.append(running[1] + running[0].timeout)
        return min(deadlines, default=None)

    def _replace(self, child: _Child, events: list[Event], timed_out: Task | None) -> None:
        """Kill ``child`` (if alive), account for each of its tasks, start a fresh child."""
        self._read(child, events)
        child.kill()
        # Results the child sent before it died are still in the pipe.
        self._read(child, events)
        child.conn.close()
        seq, _ = child.started()
        exitcode = child.process.exitcode
        for task in list(child.tasks.values()):
            if task.seq != seq:
                events.append(Returned(task))
            elif timed_out is not None and task.seq == timed_out.seq:
                detail = f"killed after running past its timeout of {task.timeout:g}s"
                events.append(Killed(task, timed_out=True, detail=detail))
            elif timed_out is not None:
                # It started in the instant between the timeout check and the kill.
                events.append(Returned(task))
            else:
                events.append(Killed(task, timed_out=False, detail=_death(exitcode)))
        child.tasks.clear()
        if timed_out is None and seq == 0:
            # It died before running anything: a broken start, not a handler's crash.
            self._failed_starts += 1
            if self._failed_starts >= _MAX_FAILED_STARTS:
                raise PoolError(
                    f"the worker's child processes die at start-up ({_death(exitcode)}); "
                    "run the worker from an installed `jobdef` command or a script file, "
                    "and check that the handlers' modules import"
                )
        else:
            self._failed_starts = 0
        index = self.children.index(child)
        self.children[index] = self._spawn()

    # -- shutting down ----------------------------------------------------------

    def recall_all(self) -> list[Task]:
        """Take back every task not yet started (draining)."""
        return [task for child in self.children for task in child.recall_waiting()]

    def kill_all(self) -> list[Task]:
        """Kill every child at once; return the tasks they held (started or not)."""
        tasks = self.in_flight()
        for child in self.children:
            child.kill()
            child.conn.close()
            child.tasks.clear()
        return tasks

    def close(self) -> None:
        """Stop idle children politely, kill any that do not stop."""
        for child in self.children:
            with contextlib.suppress(OSError):
                child.conn.send(None)
        for child in self.children:
            child.process.join(2)
            if child.process.is_alive():
                child.kill()
            child.conn.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the handler's process died of {name}"
    return f"the handler's process exited with status {exitcode}"


# -- inside the child -----------------------------------------------------------


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this child when the worker dies, so no orphan keeps running."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


_handlers: dict[str, Callable[..., Any]] = {}


def resolve_handler(path: str) -> Callable[..., Any]:
    """Import ``module:function`` once per process."""
    if path not in _handlers:
        module_name, _, attr = path.partition(":")
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        _handlers[path] = target
    return _handlers[path]


def _child_main(conn: Connection, shared: Any, database_url: str, log_level: int) -> None:
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:
        return
    # The worker decides when children stop; a terminal's Ctrl-C or a SIGTERM to the
    # process group must not kill a handler half-way.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    lock = shared.get_lock()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        with lock:
            if task.seq <= shared[_RECALL]:
                continue
            shared[_STARTED] = task.seq
            shared[_STARTED_AT] = time.monotonic()
        conn.send(_run(task, conn, database_url))


def _run(task: Task, conn: Connection, database_url: str) -> tuple[Any, ...]:
    def send_beat(progress: Any) -> None:
        conn.send(("beat", task.seq, progress))

    ctx = Context(
        job_id=task.job_id,
        job=task.job,
        attempt=task.attempt,
        max_attempts=task.max_attempts,
        idempotency_key=task.idempotency_key,
        database_url=database_url,
        _send=send_beat,
    )
    try:
        resolve_handler(task.handler)(ctx, **task.args)
    except BaseException as exc:  # a handler's SystemExit is a failed attempt too
        return (
            "error",
            task.seq,
            class_name(type(exc)),
            str(exc),
            "".join(traceback.format_exception(exc)),
            exception_names(exc),
        )
    return ("ok", task.seq)
