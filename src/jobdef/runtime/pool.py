"""The persistent pool of child processes that run handlers, with real timeout kills.

This is the worker's side; what runs in a child is in :mod:`jobdef.runtime.child`,
the messages on the pipe between the two in :mod:`jobdef.runtime.wire`. A worker
whose children run many coroutine handlers at once uses the subclass in
:mod:`jobdef.runtime.loop_pool`.

Each child is a long-lived process (started once, not once per job) that reads
tasks from its pipe and runs them one at a time. The worker may hand a child
several tasks ahead (``depth``, sent as one message), so the child never waits
for a round trip. It reports results a batch at a time, and within a batch each
half a ``depth`` (when that is :data:`_EARLY_REPORT_MIN` results or more): the
worker records one half and hands out the next batch while
the child runs the other, instead of the two taking turns (the worker idle while
the child runs a whole batch, the child idle while the worker records it and
claims the next). A small shared block tells the worker exactly which task the
child started and when, which is what timeouts are measured from. The child
writes the start time before the sequence number, so a reader that sees the new
number also sees the new time.

A task waiting in a child behind a slow one (running longer than
``recall_after``) is *recalled*: under a lock the worker raises ``recall`` above
the waiting tasks' sequence numbers and the child skips them when it reaches
them. Because the child marks a task started under the same lock, a task is
either started by the child or recalled by the worker, never both. The lock is
an ``flock`` on a small file, which the kernel drops when a process dies, so a
killed child or worker leaks nothing.

A child starts a task only while the worker vouches for its lease (``vouch``:
until when, on the monotonic clock, every lease the worker holds surely holds;
the worker says so after each heartbeat round). A worker frozen or cut from its
store past that has its children wait rather than start a job another worker
may have reclaimed; back, it vouches again or recalls what it lost.

A child that runs past its task's timeout is killed with SIGKILL; a child that
dies (``os._exit``, a segfault, the OOM killer) is noticed through its process
sentinel. Either way a fresh child takes its place: the tasks it finished count
as finished (the shared block's ``FINISHED`` tells, even of results the child had
not sent yet), the one it was running is the one killed, and only those it had
not started go back to the worker. The kill at a timeout is sent under the lock,
after checking that the child still runs that task, so a neighbour that started
in between is never cut short and run again.

The worker never blocks on a pipe: its end is non-blocking (:class:`_Channel`),
what a child has not read yet waits in memory and is written as the child reads,
and what a child sends is read as far as it has arrived. A batch of large args,
a child busy in a long handler or one frozen by SIGSTOP cannot stop the loop, so
signals, timeouts and heartbeats keep being served.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import select
import shutil
import signal
import struct
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from jobdef.backends.records import ErrorInfo
from jobdef.errors import JobdefError
from jobdef.runtime.child import (
    FINISHED,
    READ,
    RECALL,
    STARTED,
    STARTED_AT,
    VOUCHED,
    ChildSettings,
    FileLock,
    run_child,
    shared_size,
)
from jobdef.runtime.loop_child import run_loop_child
from jobdef.runtime.orphan import Unhanded
from jobdef.runtime.wire import Batch, FromChild, Progress, Ready, Results, Stop, Task, ToChild

log = logging.getLogger("jobdef.worker")

_MAX_FAILED_STARTS = 3
# The fewest results a child reports before its batch ends. Reported early, they let
# the worker record them and claim while the child runs the rest of the batch; but
# each report is a turn of the worker (a transaction), and a turn costs about what a
# handler process takes to run a few dozen quick jobs: smaller halves only add turns
# (bench/drain_cpu.py --prefetch 10, halves of five: 4,714 jobs/s against 5,562 for
# whole batches, medians of three interleaved runs).
_EARLY_REPORT_MIN = 32
# Pool.task_bytes keeps this share of itself at each batch of smaller tasks: after a
# batch of large args it takes some 20 batches to fall halfway back.
TASK_BYTES_DECAY = 0.97


class PoolError(JobdefError):
    """The worker's child processes cannot start; check how the worker is launched."""


@dataclass(frozen=True, slots=True)
class Finished:
    """The handler returned (``error is None``) or raised."""

    task: Task
    error: ErrorInfo | None = None
    error_names: tuple[str, ...] = ()
    # How long the handler ran, as its process measured it (None: not reported); a
    # measurement, not part of what the event says happened.
    duration: float | None = field(default=None, compare=False)
    # What the handler returned, as JSON text (None: it returned None, or its sheet
    # keeps no value; one the sheet refuses arrives as an error, ResultRefused).
    result: str | None = None


@dataclass(frozen=True, slots=True)
class Killed:
    """The child running ``task`` was killed at the timeout, or died on its own; or, in a
    child that runs coroutines side by side, the child cancelled ``task`` at its timeout
    (``timed_out``), or was killed while it ran ``task`` beside another."""

    task: Task
    timed_out: bool
    detail: str
    # From the start the child wrote in the shared block to the kill (or its death seen).
    duration: float | None = field(default=None, compare=False)


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


class _Channel:
    """The worker's end of a child's pipe, non-blocking both ways.

    It speaks the framing of :class:`multiprocessing.connection.Connection` (a 4-byte
    big-endian length, or -1 and an 8-byte length, then a pickle), so the child keeps
    a plain blocking ``Connection``. ``send`` queues what the socket does not take at
    once; ``flush`` writes more of it whenever the child has read some.
    """

    # Not more: os.read allocates the whole size before it reads (a megabyte costs 12 us
    # a call, 64 KiB under 1 us); a longer message takes more reads of the loop.
    _READ_SIZE = 1 << 16

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.fd = conn.fileno()
        os.set_blocking(self.fd, False)
        self._out = bytearray()
        self._in = bytearray()
        self.eof = False
        self.closed = False

    @property
    def pending(self) -> bool:
        """Some of what was sent waits for the child to read."""
        return bool(self._out)

    def send(self, message: ToChild) -> int:
        """Queue ``message`` and write what the socket takes now; its size in bytes."""
        if self.closed:
            return 0
        data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        size = len(data)
        header = struct.pack("!i", size) if size <= 0x7FFFFFFF else struct.pack("!iQ", -1, size)
        self._out += header
        self._out += data
        self.flush()
        return size

    def flush(self) -> None:
        """Write as much of what waits as the socket takes now, without waiting."""
        while self._out and not self.closed:
            try:
                written = os.write(self.fd, self._out)
            except BlockingIOError:
                return
            except OSError:  # the child is gone; its sentinel tells the pool
                self._out.clear()
                return
            del self._out[:written]

    def receive(self) -> list[FromChild]:
        """Every whole message that has arrived (``eof`` is set once the child is gone)."""
        while not (self.eof or self.closed):
            try:
                chunk = os.read(self.fd, self._READ_SIZE)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                break
            self._in += chunk
            if len(chunk) < self._READ_SIZE:
                break
        messages: list[FromChild] = []
        buffer, at = self._in, 0
        while len(buffer) - at >= 4:
            (size,) = struct.unpack_from("!i", buffer, at)
            start = at + 4
            if size == -1:
                if len(buffer) - at < 12:
                    break
                (size,) = struct.unpack_from("!Q", buffer, start)
                start += 8
            if len(buffer) - start < size:
                break
            messages.append(pickle.loads(buffer[start : start + size]))
            at = start + size
        del buffer[:at]
        return messages

    def close(self) -> None:
        self._out.clear()
        self.closed = self.eof = True
        self.conn.close()


class _Child:
    def __init__(
        self,
        ctx: Any,
        settings: ChildSettings,
        lock_dir: str,
        vouched: float,
        unhanded: Unhanded,
    ) -> None:
        self.shared = ctx.RawArray("d", [0.0] * shared_size(settings.async_slots))
        self.shared[VOUCHED] = vouched
        self.sent = 0
        # Set when the child says it has started and imported the handlers: until then
        # it takes no work, so no job is claimed only to wait for a process to boot.
        self.ready = False
        # Its handlers that are ``async def`` (it says so when ready).
        self.coroutines: frozenset[str] = frozenset()
        # Tasks whose coroutine the worker cancelled (lease lost) and that still run, with
        # the monotonic time by which they must have ended (a child running coroutines
        # side by side only, see jobdef.runtime.loop_pool).
        self.cancelling: dict[int, tuple[Task, float]] = {}
        fd, self.lock_path = tempfile.mkstemp(prefix="child-", suffix=".lock", dir=lock_dir)
        self.lock = FileLock(fd)
        parent_conn, child_conn = ctx.Pipe()
        self.conn = _Channel(parent_conn)
        self.process = ctx.Process(
            target=run_loop_child if settings.async_slots > 1 else run_child,
            args=(child_conn, self.shared, self.lock_path, settings, unhanded.block),
            daemon=True,
            name="jobdef-child",
        )
        self.process.start()
        child_conn.close()
        self.tasks: OrderedDict[int, Task] = OrderedDict()

    def started(self) -> tuple[int, float]:
        # No lock: the child writes the time first, so a new number comes with a new time.
        seq = int(self.shared[STARTED])
        return seq, self.shared[STARTED_AT]

    def running(self) -> tuple[Task, float] | None:
        """The task the child is running now, and when it started."""
        seq, at = self.started()
        task = self.tasks.get(seq)
        return (task, at) if task is not None else None

    def recall_waiting(self) -> list[Task]:
        """Take back every task the child has not started yet.

        The mark only rises: ``tasks`` may hold nothing above what the child started (its
        results not in yet), and a mark lowered to that would let the child start the
        tasks an earlier recall took back, which the worker has handed out again."""
        if not self.tasks:
            return []
        with self.lock:
            self.shared[RECALL] = max(self.shared[RECALL], *self.tasks)
            started = int(self.shared[STARTED])
        waiting = [seq for seq in self.tasks if seq > started]
        return [self.tasks.pop(seq) for seq in waiting]

    def stop_running(self, seq: int) -> bool:
        """SIGKILL the child if it still runs task ``seq`` and has not finished it; False
        when it has moved on. Under the lock, so it cannot start another task meanwhile."""
        with self.lock:
            if int(self.shared[STARTED]) != seq or self.shared[FINISHED] >= seq:
                return False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
        return True

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(5)
        self.lock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.lock_path)


class Pool:
    """``size`` children started with ``settings``, each taking up to ``depth`` tasks ahead;
    one waiting behind a slow task longer than ``recall_after`` seconds is recalled."""

    def __init__(
        self,
        size: int,
        settings: ChildSettings,
        *,
        depth: int = 4,
        recall_after: float = 0.5,
    ) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        # The claims the worker holds that no child has, which the children give back
        # should the worker die (runtime.orphan).
        self.unhanded = Unhanded(self._ctx)
        self.settings = settings
        self.size = size
        self.depth = depth
        self._report_every = max(_EARLY_REPORT_MIN, depth // 2)
        self.recall_after = recall_after
        _remove_stale_lock_dirs()
        self._lock_dir = tempfile.mkdtemp(prefix=f"{_LOCK_DIR_PREFIX}{os.getpid()}-")
        self._seq = 0
        self._failed_starts = 0
        # Until when (monotonic) the children may start the tasks they hold: a worker
        # that holds leases says so at each heartbeat round (vouch); a pool nobody
        # vouches for starts whatever it is handed.
        self.vouched = float("inf")
        # Bytes a task handed out takes, about (its args, mostly), from the batches sent:
        # it rises at once with a batch of larger ones and falls back slowly, so a worker
        # that bounds its jobs' memory by it (WorkerSettings.prefetch_mib) errs on the
        # low side of jobs. 0 until a batch was sent.
        self.task_bytes = 0.0
        self.children = [self._spawn() for _ in range(size)]

    def _spawn(self) -> _Child:
        return _Child(self._ctx, self.settings, self._lock_dir, self.vouched, self.unhanded)

    def vouch(self, until: float) -> None:
        """The leases of every task handed out hold until at least ``until`` (monotonic):
        the children may start what they hold until then (:data:`child.VOUCHED`)."""
        self.vouched = until
        for child in self.children:
            child.shared[VOUCHED] = until

    # -- handing out work -------------------------------------------------------

    def _open(self, now: float) -> list[_Child]:
        """Children that may take more work: idle, or running a task that is not slow, and
        that have read the last batch sent to them.

        At most one unread batch per pipe keeps what waits in the worker's memory for a
        busy child to one batch.
        """
        children = []
        for child in self.children:
            if not child.ready or child.sent > child.shared[READ] or child.conn.pending:
                continue
            if not self._slow(child, now):
                children.append(child)
        return children

    def capacity(self) -> int:
        """How many more tasks the children that are not stuck on a slow task can take."""
        return sum(self.depth - len(c.tasks) for c in self._open(time.monotonic()))

    def room(self) -> tuple[int, int]:
        """(capacity(), ``depth`` times the number of ready children not stuck on a slow
        task): what the children can take now, and what they take once their turn ends."""
        now = time.monotonic()
        moving = sum(1 for c in self.children if c.ready and not self._slow(c, now))
        return sum(self.depth - len(c.tasks) for c in self._open(now)), self.depth * moving

    def _slow(self, child: _Child, now: float) -> bool:
        running = child.running()
        return running is not None and now - running[1] > self.recall_after

    def wait_ready(self, timeout: float, stop: Callable[[], bool]) -> None:
        """Wait (up to ``timeout``, or until ``stop()``) for every child to be ready, before
        any work is handed out: jobs are not claimed only to wait for processes to boot."""
        deadline = time.monotonic() + timeout
        while self.starting() and not stop() and time.monotonic() < deadline:
            # No task is out yet, so the only events are children starting (or dying).
            self.poll(0.05)

    def starting(self) -> bool:
        """True while some child has not said it is ready yet."""
        return not all(child.ready for child in self.children)

    def idle_children(self) -> int:
        return sum(1 for child in self.children if not child.tasks)

    def in_flight(self) -> list[Task]:
        return [task for child in self.children for task in child.tasks.values()]

    def busy(self) -> bool:
        """Whether a child holds a task (running it, or to run next): ``in_flight()``
        without the list."""
        return any(child.tasks for child in self.children)

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def dispatch(self, tasks: list[Task]) -> list[Task]:
        """Hand out ``tasks``, least busy child first, one message per child; return the
        tasks no child had room for."""
        children = self._open(time.monotonic())
        # How many tasks each holds, kept here as tasks are handed out: the least busy
        # is found without a call of Python per child and task.
        held = [len(child.tasks) for child in children]
        batches: dict[int, list[Task]] = {}
        left = []
        for task in tasks:
            at = min(range(len(held)), key=held.__getitem__, default=None)
            if at is None or held[at] >= self.depth:
                left.append(task)
                continue
            child = children[at]
            child.tasks[task.seq] = task
            held[at] += 1
            batches.setdefault(id(child), []).append(task)
        for child in children:
            if id(child) in batches:
                self._hand(child, Batch(batches[id(child)], report_every=self._report_every))
        return left

    def _hand(self, child: _Child, batch: Batch) -> None:
        """Send ``batch`` to ``child``, noting what its tasks take (:attr:`task_bytes`)."""
        child.sent += 1
        size = child.conn.send(batch)
        self.task_bytes = max(size / len(batch.tasks), self.task_bytes * TASK_BYTES_DECAY)

    # -- hearing back -----------------------------------------------------------

    def poll(self, timeout: float, also: Sequence[int] = ()) -> list[Event]:
        """Wait up to ``timeout`` for results, or until a file of ``also`` is readable
        (its owner reads it), then return every result that is ready."""
        poller = select.poll()
        by_fd: dict[int, _Child] = {}
        for child in self.children:
            by_fd[child.conn.fd] = child
            by_fd[child.process.sentinel] = child
            poller.register(child.conn.fd, select.POLLIN | (select.POLLOUT * child.conn.pending))
            poller.register(child.process.sentinel, select.POLLIN)
        for fd in also:
            poller.register(fd, select.POLLIN)
        ready = poller.poll(max(0.0, timeout) * 1000)
        events: list[Event] = []
        dead: list[_Child] = []
        for fd, mask in ready:
            if fd in also:
                continue
            child = by_fd[fd]
            if fd != child.conn.fd:
                if child not in dead:
                    dead.append(child)
                continue
            if mask & select.POLLOUT:
                child.conn.flush()
            if mask & ~select.POLLOUT and not self._read(child, events) and child not in dead:
                dead.append(child)
        for child in dead:
            self._replace(child, events, timed_out=None)
        return events

    def _read(self, child: _Child, events: list[Event]) -> bool:
        """Read every message that has arrived from ``child``; False once it is gone."""
        for message in child.conn.receive():
            if isinstance(message, Results):
                events.extend(_finished(child, message))
            elif isinstance(message, Progress):
                task = child.tasks.get(message.seq)
                if task is not None:
                    events.append(Beat(task, message.progress))
            elif isinstance(message, Ready):
                child.ready = True
                child.coroutines = message.coroutines
        return not child.conn.eof

    def enforce(self) -> list[Event]:
        """Kill children whose running task passed its timeout; recall work stuck behind
        slow tasks while another child sits idle."""
        now = time.monotonic()
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
                if child.conn.eof or child.stop_running(task.seq):
                    self._replace(child, events, timed_out=task)
            elif now - started_at > self.recall_after and max(child.tasks) > task.seq:
                # Tasks wait behind it (the others it holds may be finished ones whose
                # results are not read yet).
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

    def abandon(self, task: Task) -> tuple[list[Event], bool]:
        """Stop ``task`` for good (its lease was lost): take it back if it has not
        started, kill its child if it runs it. No event tells of ``task`` itself; the
        events returned tell of the other tasks that child held. The flag: whether its
        handler had started."""
        child = next((c for c in self.children if task.seq in c.tasks), None)
        if child is None:
            return [], True  # it has ended: its result is in or on the way
        events: list[Event] = []
        if child.started()[0] < task.seq:
            events.extend(Returned(t) for t in child.recall_waiting() if t.seq != task.seq)
            if task.seq not in child.tasks:
                return events, False  # taken back before it started
        self._stop_started(child, task, events)
        return events, True

    def _stop_started(self, child: _Child, task: Task, events: list[Event]) -> None:
        """Stop ``task``, which ``child`` started: kill the child if it still runs it
        (the events of its other tasks join ``events``). Otherwise it has finished:
        its result arrives and is ignored."""
        if child.stop_running(task.seq):
            self._replace(child, events, timed_out=None, abandoned=task)

    def _replace(
        self,
        child: _Child,
        events: list[Event],
        timed_out: Task | None,
        abandoned: Task | None = None,
        why: str | None = None,
    ) -> None:
        """Kill ``child`` (if alive), account for each of its tasks, start a fresh child.
        ``why``: what the killed tasks' attempts say, when it is not their own doing and
        no neighbour timed out (default: how the process died)."""
        events.extend(self._end(child))
        running = self._running(child)
        now = time.monotonic()
        exitcode = child.process.exitcode
        for task in list(child.tasks.values()):
            if abandoned is not None and task.seq == abandoned.seq:
                continue
            if task.seq not in running:
                events.append(Returned(task))  # not started
                continue
            ran = now - running[task.seq]
            if timed_out is not None and task.seq == timed_out.seq:
                detail = self._timeout_detail(task)
                events.append(Killed(task, timed_out=True, detail=detail, duration=ran))
            elif timed_out is not None:  # a neighbour on the same event loop
                detail = (
                    f"killed with its handler process, in which job {timed_out.job_id} "
                    f"({timed_out.job}) held the event loop past its timeout of "
                    f"{timed_out.timeout:g}s"
                )
                events.append(Killed(task, timed_out=False, detail=detail, duration=ran))
            else:
                detail = why or _death(exitcode)
                events.append(Killed(task, timed_out=False, detail=detail, duration=ran))
        child.tasks.clear()
        child.cancelling.clear()
        if timed_out is None and abandoned is None and why is None and child.started()[0] == 0:
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

    def _running(self, child: _Child) -> dict[int, float]:
        """The tasks ``child`` started and has not finished (read after ``_end``: the shared
        block outlives the child), with when each started: here the one it ran last."""
        seq, at = child.started()
        return {seq: at} if seq else {}

    def _timeout_detail(self, task: Task) -> str:
        return f"killed after running past its timeout of {task.timeout:g}s"

    # -- shutting down ----------------------------------------------------------

    def recall_all(self) -> list[Task]:
        """Take back every task not yet started (draining)."""
        return [task for child in self.children for task in child.recall_waiting()]

    def kill_all(self, why: str) -> list[Event]:
        """Kill every child at once: a :class:`Finished` for each task a child finished
        (reported or not), a :class:`Killed` (``why``) for the one each was running, whose
        handler ran and so used its attempt, and a :class:`Returned` for every task not
        started."""
        events: list[Event] = []
        for child in self.children:
            events.extend(self._end(child))
            running = self._running(child)
            now = time.monotonic()
            for task in child.tasks.values():
                if task.seq in running:
                    ran = max(0.0, now - running[task.seq])
                    events.append(Killed(task, timed_out=False, detail=why, duration=ran))
                else:
                    events.append(Returned(task))
            child.tasks.clear()
            child.cancelling.clear()
        return events

    def _end(self, child: _Child) -> list[Event]:
        """Kill ``child`` and close its pipe; the events of the tasks it finished, from
        the pipe and, for results it had not sent yet, from the shared block."""
        events: list[Event] = []
        self._read(child, events)
        child.kill()
        # Results the child sent before it died are still in the pipe.
        self._read(child, events)
        child.conn.close()
        # Every failure was sent before FINISHED moved past it: the rest returned.
        finished = int(child.shared[FINISHED])
        for seq in [seq for seq in child.tasks if seq <= finished]:
            events.append(Finished(child.tasks.pop(seq)))
        return events

    def close(self, grace: float = 2.0) -> None:
        """Stop idle children politely, kill any that do not stop within ``grace`` seconds
        each."""
        for child in self.children:
            child.conn.send(Stop())
        for child in self.children:
            child.process.join(grace)
            if child.process.is_alive():
                child.kill()
            child.conn.close()
        shutil.rmtree(self._lock_dir, ignore_errors=True)


_LOCK_DIR_PREFIX = "jobdef-pool-"


def _remove_stale_lock_dirs() -> None:
    """Remove the lock folders of pools whose worker died without cleaning up (kill -9)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_LOCK_DIR_PREFIX}*-*"):
        pid = folder.name.removeprefix(_LOCK_DIR_PREFIX).partition("-")[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            pass  # alive, another user's


def _finished(child: _Child, results: Results) -> list[Event]:
    """The events of the tasks in ``results`` that ``child`` still held, in the order the
    child ran them."""
    events: list[Event] = []
    elapsed = results.elapsed or {}
    returned = results.returned or {}
    timed_out = results.timed_out or frozenset()
    for seq in results.done:
        child.cancelling.pop(seq, None)
        task = child.tasks.pop(seq, None)
        if task is not None:
            events.append(Finished(task, duration=elapsed.get(seq), result=returned.get(seq)))
    for failed in results.failed:
        child.cancelling.pop(failed.seq, None)
        task = child.tasks.pop(failed.seq, None)
        if task is not None and failed.seq in timed_out:
            detail = f"cancelled after running past its timeout of {task.timeout:g}s"
            events.append(Killed(task, True, detail, elapsed.get(failed.seq)))
        elif task is not None:
            error = ErrorInfo(failed.error_type, failed.message, failed.traceback)
            events.append(Finished(task, error, tuple(failed.names), elapsed.get(failed.seq)))
    if results.failed:
        # One batch's results: a child runs a batch in the order of its sequence numbers.
        events.sort(key=lambda event: event.task.seq)
    return events


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the handler's process died of {name}"
    return f"the handler's process exited with status {exitcode}"
