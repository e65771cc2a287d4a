"""The messages on the pipe between a worker and its child processes, one named tuple per kind.

On the pipe, the worker sends :class:`Batch` (tasks to run, in order), to a child
that runs coroutines side by side :class:`Cancel` (stop one of them: its lease was
lost), and, at the end, :class:`Stop`. The child answers :class:`Ready` once, when
it has imported the handlers, then :class:`Progress` whenever a handler calls
``ctx.heartbeat(progress)`` and :class:`Results` (which tasks it ran returned,
with the return values that are not ``None`` as JSON text, and a
:class:`TaskFailed` for each that raised) at the end of each batch, or sooner:
each time the results held number the batch's ``report_every``, or when a
result has waited a moment (:data:`jobdef.runtime.child._RESULT_DELAY`).

Both sides import this module: the worker (:mod:`jobdef.runtime.pool`), the child
(:mod:`jobdef.runtime.child`) and the child's watcher that gives back what it holds
when its worker dies (:mod:`jobdef.runtime.orphan`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

# Named tuples, not dataclasses: a task crosses the pipe once per job, and
# tuples pickle several times faster. A task that returned comes back as its bare
# sequence number, which pickles faster still.


class Task(NamedTuple):
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
    # The cron slot of a scheduled batch job, in its sheet's time zone.
    slot: datetime | None = None
    queue: str = ""
    # The enqueuer's trace context, the parent of the attempt's span.
    trace_context: str | None = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Unpickled by tuple.__new__ itself, not through the named tuple's __new__ (a
        # Python function of twelve arguments): a quarter less CPU per task in the
        # handler process that reads it, a third less in the worker that writes it.
        return tuple.__new__, (Task, tuple(self))


class Batch(NamedTuple):
    """Worker to child: run these tasks in order (the worker sends the next batch only
    once the child has read this one, see the shared block's ``READ``)."""

    tasks: list[Task]
    # Send the results held each time they number this many, not only at the batch's
    # end (None: at the end), so the worker records them and hands out the next batch
    # while the child runs the rest of this one.
    report_every: int | None = None


class Stop(NamedTuple):
    """Worker to child: exit (sent to idle children when the worker stops)."""


class Cancel(NamedTuple):
    """Worker to a child that runs coroutines side by side: cancel the coroutine of task
    ``seq`` (its lease was lost); the child reports its end like any other."""

    seq: int


class Ready(NamedTuple):
    """Child to worker: started and imported the handlers; it takes work from now on.
    ``coroutines``: the handlers (``module:function``) that are ``async def``, which a
    child running coroutines side by side may run several at once."""

    coroutines: frozenset[str] = frozenset()


class Progress(NamedTuple):
    """Child to worker: the handler of task ``seq`` called ``ctx.heartbeat(progress)``."""

    seq: int
    progress: Any


class TaskFailed(NamedTuple):
    """The handler of task ``seq`` raised; ``names``: the exception's MRO as sheet names."""

    seq: int
    error_type: str
    message: str
    traceback: str
    names: tuple[str, ...]


class Results(NamedTuple):
    """Child to worker: the tasks it ran since its last ``Results``, each in order of
    running: ``done`` the sequence numbers of those whose handler returned, ``failed``
    those that raised."""

    done: list[int]
    failed: list[TaskFailed]
    # How long each of those tasks' handler ran, seconds, by sequence number.
    elapsed: dict[int, float] | None = None
    # The return values of the tasks in ``done`` that returned something other than
    # None, as JSON text, by sequence number (checked: plain JSON, bounded).
    returned: dict[int, str] | None = None
    # Tasks of ``failed`` whose coroutine the child cancelled at the task's timeout.
    timed_out: frozenset[int] | None = None


ToChild = Batch | Cancel | Stop
FromChild = Ready | Progress | Results
