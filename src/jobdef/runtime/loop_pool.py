"""The pool of a worker whose handler processes run coroutine handlers side by side.

With ``jobdef worker --async-per-process N`` each child (:mod:`jobdef.runtime.loop_child`)
runs up to N tasks of ``async def`` handlers at once on its event loop, and starts
each as soon as it reads it: nothing waits inside a child, so a job the store counts
as running (claimed, against its queue's concurrency limit) is a coroutine that runs
or is about to start, and the worker claims at most processes × N jobs.

A task of a plain (sync) handler runs alone in a child, as in the one-at-a-time pool:
it goes only to a child that holds nothing, and that child takes nothing more until
it is done. When no child is empty, the least busy one is set aside (it takes no new
coroutines) so that a steady flow of coroutines cannot keep a sync task waiting.

Timeouts: the child cancels a coroutine at its timeout, and its attempt ends as a
timeout while the others run on. A coroutine that does not end within
:data:`KILL_GRACE` seconds more (it ignores the cancellation, or blocks the loop)
gets its child killed: that task ends as a timeout, every other task the child was
running as a crashed attempt, and the tasks it had not started go back to the
worker; a fresh child takes its place. A sync handler is killed at its timeout, as
in the one-at-a-time pool. A task whose lease was lost has only its coroutine
cancelled; should it not end within the grace, the child is killed the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import replace

from jobdef.runtime.child import READ, SLOTS, ChildSettings
from jobdef.runtime.pool import Event, Pool, _Child
from jobdef.runtime.wire import Batch, Cancel, Task

# Seconds a coroutine has, past its timeout (or past a cancellation at a lost lease), to
# end before its child is killed with every task in it.
KILL_GRACE = 2.0


class LoopPool(Pool):
    """``size`` children started with ``settings``, each running up to ``slots`` coroutine
    handlers at once (``settings.async_slots`` is set to ``slots``)."""

    def __init__(self, size: int, settings: ChildSettings, *, slots: int) -> None:
        super().__init__(size, replace(settings, async_slots=slots), depth=slots)
        # The child set aside for a sync task that found no empty child.
        self._reserved: _Child | None = None

    # -- which tasks run where ----------------------------------------------------

    def _coroutine(self, child: _Child, task: Task) -> bool:
        return task.handler in child.coroutines

    def _takes(self, child: _Child) -> bool:
        """Whether ``child`` may be sent a batch now (ready, and it read the last one)."""
        return child.ready and child.sent <= child.shared[READ] and not child.conn.pending

    def _room(self, child: _Child) -> int:
        """How many more coroutines ``child`` may start now."""
        if not self._takes(child):
            return 0
        if child is self._reserved:
            # Set aside for a sync task: open, once empty, to that task alone (it comes
            # first in the next dispatch). Counted, or a worker whose other children are
            # full would never dispatch again, and the task would wait for good.
            return 1 if not child.tasks and not child.cancelling else 0
        if any(not self._coroutine(child, task) for task in child.tasks.values()):
            return 0  # a sync task runs alone
        return max(0, self.depth - len(child.tasks) - len(child.cancelling))

    def _open(self, now: float) -> list[_Child]:
        return [child for child in self.children if self._room(child) > 0]

    def capacity(self) -> int:
        return sum(self._room(child) for child in self.children)

    def room(self) -> tuple[int, int]:
        ready = sum(1 for child in self.children if child.ready)
        return self.capacity(), self.depth * ready

    def dispatch(self, tasks: list[Task]) -> list[Task]:
        """Hand out ``tasks``: each coroutine to the least busy child with room, each sync
        task to an empty child; return those no child could take now."""
        # A child stays set aside only while a sync task of this call waits for it.
        previous, self._reserved = self._reserved, None
        sent: dict[int, tuple[_Child, list[Task]]] = {}
        left = []
        for task in tasks:
            child = self._place(task, previous)
            if child is None:
                left.append(task)
                continue
            child.tasks[task.seq] = task
            sent.setdefault(id(child), (child, []))[1].append(task)
        for child, batch in sent.values():
            self._hand(child, Batch(batch))
        return left

    def _place(self, task: Task, previous: _Child | None) -> _Child | None:
        """The child to run ``task`` now (None: none can); a sync task that finds no empty
        child sets one aside, the one set aside before if it still runs."""
        ready = [child for child in self.children if child.ready]
        if not ready:
            return None
        if self._coroutine(ready[0], task):
            open_children = [child for child in ready if self._room(child) > 0]
            return min(open_children, key=lambda c: len(c.tasks), default=None)
        empty = [c for c in ready if self._takes(c) and not c.tasks and not c.cancelling]
        if empty:
            return previous if previous in empty else empty[0]
        if self._reserved is None:
            busy = min(ready, key=lambda c: len(c.tasks) + len(c.cancelling))
            self._reserved = previous if previous in ready else busy
        return None

    # -- timeouts and lost leases -------------------------------------------------

    def _running(self, child: _Child) -> dict[int, float]:
        """The tasks whose pair of slots is taken: started, and their result not yet on
        the pipe (the child frees the pair after sending it)."""
        running = {}
        for slot in range(self.depth):
            at = SLOTS + 2 * slot
            seq = int(child.shared[at])
            if seq:
                running[seq] = child.shared[at + 1]
        return running

    def _deadline(self, child: _Child, seq: int, started_at: float) -> tuple[Task, float] | None:
        """The task ``seq`` of ``child`` and when its child is killed if it still runs."""
        task = child.tasks.get(seq)
        if task is not None:
            grace = KILL_GRACE if self._coroutine(child, task) else 0.0
            return task, started_at + task.timeout + grace
        return child.cancelling.get(seq)

    def _overdue(self, child: _Child, now: float) -> Task | None:
        for seq, started_at in self._running(child).items():
            deadline = self._deadline(child, seq, started_at)
            if deadline is not None and now > deadline[1]:
                return deadline[0]
        return None

    def enforce(self) -> list[Event]:
        """Kill children in which a task is past its timeout and its grace."""
        now = time.monotonic()
        events: list[Event] = []
        for child in list(self.children):
            if self._overdue(child, now) is None:
                continue
            # Results may have arrived since the last poll: read before judging.
            alive = self._read(child, events)
            task = self._overdue(child, now)
            if task is None:
                continue
            if not alive or self._kill_if_running(child, task.seq):
                if task.seq in child.cancelling:
                    # A cancelled coroutine (lost lease, `jobdef cancel`) that did not end:
                    # its attempt is recorded already; its neighbours say why they died.
                    why = (
                        f"killed with its handler process, in which job {task.job_id} "
                        f"({task.job}) did not end within {KILL_GRACE:g}s of its "
                        "cancellation (its lease was lost or it was cancelled)"
                    )
                    self._replace(child, events, timed_out=None, why=why)
                else:
                    self._replace(child, events, timed_out=task)
        return events

    def next_deadline(self) -> float | None:
        deadlines = []
        for child in self.children:
            for seq, started_at in self._running(child).items():
                deadline = self._deadline(child, seq, started_at)
                if deadline is not None:
                    deadlines.append(deadline[1])
        return min(deadlines, default=None)

    def _timeout_detail(self, task: Task) -> str:
        child = next((c for c in self.children if task.seq in c.tasks), None)
        if child is None or not self._coroutine(child, task):
            return super()._timeout_detail(task)
        return (
            f"killed after running past its timeout of {task.timeout:g}s: its coroutine did "
            f"not end within {KILL_GRACE:g}s of its cancellation (it blocks the event loop, "
            "or ignores the cancellation)"
        )

    def _kill_if_running(self, child: _Child, seq: int) -> bool:
        """SIGKILL ``child`` if task ``seq`` still holds its pair of slots; under the lock,
        so the child cannot start another task meanwhile."""
        with child.lock:
            if seq not in self._running(child):
                return False
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.process.pid, signal.SIGKILL)
        return True

    def _stop_started(self, child: _Child, task: Task, events: list[Event]) -> None:
        """Cancel ``task``'s coroutine if it runs one (the child's other tasks run on);
        kill the child if it runs ``task``'s sync handler."""
        if not self._coroutine(child, task):
            if self._kill_if_running(child, task.seq):
                self._replace(child, events, timed_out=None, abandoned=task)
            return
        del child.tasks[task.seq]
        child.cancelling[task.seq] = (task, time.monotonic() + KILL_GRACE)
        child.conn.send(Cancel(task.seq))
