"""A handler process that runs many coroutine handlers at once on its event loop.

A worker started with ``async_slots`` above 1 (``jobdef worker
--async-per-process N``) gives each child up to N tasks of ``async def`` handlers
at a time, and the child starts every one as soon as it reads it: each is an
:class:`asyncio.Task` on the child's one event loop, so hundreds of handlers that
wait on I/O share one process. A task of a plain (sync) handler still runs alone:
the worker hands it only to a child that holds nothing, and gives that child
nothing more until it is done (:mod:`jobdef.runtime.loop_pool`).

The shared block tells the worker which tasks run: the child takes a free pair of
slots (``shared_size``) for each task it starts, writing the start time, then the
sequence number, under the lock the worker holds to recall or to kill; it frees the
pair only after the task's result is on the pipe. So a kill finds in the block every
task that started and whose result the pipe does not hold, and nothing else.

Isolation: the tasks of one child share a process and a loop. The sheet's timeout
cancels the coroutine (:class:`asyncio.Timeout`): its attempt ends as a timeout and
the others go on. A coroutine that ignores its cancellation, or code that blocks the
loop, holds every task of the child; the worker kills the child once the task is past
its timeout by a grace (:data:`jobdef.runtime.loop_pool.KILL_GRACE`), and each task
the child was running ends as a crashed attempt, the blocking one as a timeout.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import time
from multiprocessing.connection import Connection
from typing import Any

from jobdef.runtime.child import (
    READ,
    RECALL,
    SLOTS,
    STARTED,
    STARTED_AT,
    VOUCH_POLL,
    VOUCHED,
    ChildSettings,
    FileLock,
    context,
    coroutine_handlers,
    event_loop,
    failed,
    given_up,
    kept,
    resolve_task_handler,
    send,
    start_child,
)
from jobdef.runtime.orphan import HOLDINGS
from jobdef.runtime.wire import Cancel, Results, Stop, Task, TaskFailed
from jobdef.telemetry.traces import attempt_span


def run_loop_child(
    conn: Connection, shared: Any, lock_path: str, settings: ChildSettings, unhanded: Any = None
) -> None:
    """A child process's entry: start as every child does, then run the tasks the worker
    sends, side by side, until it sends Stop or goes away. Should a send to the worker
    break because the worker died, the tasks not started are given back first."""
    try:
        lock = start_child(conn, shared, lock_path, settings, unhanded)
        if lock is None:
            return
        event_loop().run_until_complete(_LoopChild(conn, shared, lock, settings).run())
    except OSError:
        HOLDINGS.ended()
        raise


class _LoopChild:
    def __init__(
        self, conn: Connection, shared: Any, lock: FileLock, settings: ChildSettings
    ) -> None:
        self.conn = conn
        self.shared = shared
        self.lock = lock
        self.settings = settings
        # The handlers that are `async def` (imported by start_child): the others run off
        # the loop (see _run).
        self.coroutines = coroutine_handlers(settings.handlers)
        self.running: dict[int, asyncio.Task[None]] = {}
        # The pair of slots of each task started, by sequence number.
        self.slot_of: dict[int, int] = {}
        self.free = list(range(settings.async_slots - 1, -1, -1))
        self.ended: asyncio.Future[None] | None = None
        # Tasks read while the worker did not vouch for their leases (runtime.child), in
        # the order read: they start in that order, as the worker's recall expects (it
        # takes back every task numbered above the last one started).
        self.held_back: collections.deque[Task] = collections.deque()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.ended = loop.create_future()
        loop.add_reader(self.conn.fileno(), self._read)
        try:
            await self.ended
        finally:
            loop.remove_reader(self.conn.fileno())

    def _end(self) -> None:
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(None)

    def _read(self) -> None:
        """The pipe is readable: take one message and act on it."""
        try:
            with HOLDINGS.reading:
                message = self.conn.recv()
                HOLDINGS.read(message)
        except (EOFError, OSError):
            HOLDINGS.ended()
            self._end()
            return
        if isinstance(message, Stop):
            self._end()
        elif isinstance(message, Cancel):
            task = self.running.get(message.seq)
            if task is not None:
                task.cancel()
        else:
            self.shared[READ] += 1
            for task in message.tasks:
                self._start(task)

    def _start(self, task: Task) -> None:
        if self.held_back:
            self.held_back.append(task)  # behind the ones held back before it
        elif not self._try_start(task):
            self.held_back.append(task)
            asyncio.get_running_loop().call_later(VOUCH_POLL, self._start_held_back)

    def _start_held_back(self) -> None:
        """Start (or skip) the tasks held back, in order, while the worker vouches again."""
        while self.held_back:
            if not self._try_start(self.held_back[0]):
                asyncio.get_running_loop().call_later(VOUCH_POLL, self._start_held_back)
                return
            self.held_back.popleft()

    def _try_start(self, task: Task) -> bool:
        """Start ``task``, or skip it (recalled, or the worker died); False, doing
        neither, while the worker does not vouch for its lease."""
        with self.lock, HOLDINGS.guard:
            now = time.monotonic()
            held_back = now > self.shared[VOUCHED] and not given_up(task, self.shared)
            start = not held_back and HOLDINGS.may_start(task.seq, self.shared[RECALL])
            if start:
                # The worker hands a child no more tasks than it has pairs of slots.
                slot = self.free.pop()
                at = SLOTS + 2 * slot
                self.shared[at + 1] = now
                self.shared[at] = task.seq
                # The last task started, as in a one-at-a-time child: the worker tells a
                # child that died before running anything by it.
                self.shared[STARTED_AT] = now
                self.shared[STARTED] = task.seq
                self.slot_of[task.seq] = slot
        if held_back:  # its worker no longer vouches for the lease (runtime.child)
            return False
        if not start:
            HOLDINGS.wait_if_orphaned()  # the worker died: this task is given back
            return True
        coroutine = self._attempt(task, now)
        self.running[task.seq] = asyncio.get_running_loop().create_task(coroutine)
        return True

    async def _attempt(self, task: Task, started: float) -> None:
        try:
            error, value, timed_out = await _run(task, self.conn, self.settings, self.coroutines)
        finally:
            self.running.pop(task.seq, None)
        elapsed = {task.seq: time.monotonic() - started}
        if error is None:
            returned = {task.seq: value} if value is not None else None
            results = Results([task.seq], [], elapsed, returned)
        else:
            results = Results(
                [], [error], elapsed, None, frozenset([task.seq]) if timed_out else None
            )
        # Sent now, before the loop runs anything else: a neighbour that then blocks the
        # loop until the process is killed must not take a finished attempt down with it
        # (it would count as crashed and run again). The task's slots are freed only
        # after: a kill in between finds it still running, and its result in the pipe.
        send(self.conn, results)
        slot = self.slot_of.pop(task.seq)
        self.shared[SLOTS + 2 * slot] = 0
        self.free.append(slot)


async def _run(
    task: Task, conn: Connection, settings: ChildSettings, coroutines: frozenset[str]
) -> tuple[TaskFailed | None, str | None, bool]:
    """Run one task's handler with its timeout as a cancellation: what it raised (or
    None), what it returned as JSON text, and whether the timeout cancelled it."""
    scope = asyncio.timeout(task.timeout)
    try:
        # Inside the try, as in a one-at-a-time child: a handler that no longer imports
        # (HandlerUnavailable, the job is released) or a context that cannot be made is
        # this task's result, not an exception that would leave its slots taken and its
        # process to be killed at the timeout.
        ctx = context(task, conn, settings)
        span = attempt_span(task.job, task.queue, task.job_id, task.attempt, task.trace_context)
        handler = resolve_task_handler(task.handler)
        with span:
            async with scope:
                if task.handler in coroutines:
                    result = handler(ctx, **task.args)
                else:
                    # A sync handler runs alone in its process, as in a one-job process:
                    # off the loop's thread, where asyncio.run() and code that refuses a
                    # running loop (Django's ORM) work. Its timeout kills the process.
                    result = await asyncio.to_thread(handler, ctx, **task.args)
                if inspect.isawaitable(result):
                    result = await result
    except BaseException as exc:  # a handler's SystemExit is a failed attempt too
        return failed(task.seq, exc), None, scope.expired()
    if scope.expired():
        # It swallowed its cancellation and returned: still past its timeout.
        late = TimeoutError(f"the handler ran past its timeout of {task.timeout:g}s")
        return failed(task.seq, late), None, True
    error, value = kept(task, settings, result)
    return error, value, False
