"""One attempt of a handler inside the test process: a thread of its own with a deadline,
and the :class:`Attempt` the store recorded of it.

The worker runs a handler in a child process and SIGKILLs it at the sheet's
``timeout``. The testing kit runs it in a thread of the test's process instead,
so a test's monkeypatches, fakes and breakpoints reach the handler, and so an
attempt costs a thread start rather than a process. The deadline is kept the
same way from the outside: the thread is joined for at most the timeout (times
the queue's ``timeout_scale``), and an attempt still running then has timed out
and is recorded as the worker records a kill.

What differs from the worker: a thread cannot be killed. The kit asks it to
stop by raising :class:`AttemptAbandoned` in it (which Python delivers at the
handler's next bytecode, not inside a blocking C call such as a long
``time.sleep`` or a socket read), and does not wait for it: whatever the
abandoned handler does later is not recorded, exactly as the worker records
nothing of a killed child. A handler that calls ``os._exit`` or crashes the
interpreter takes the test process with it; crash isolation is the worker's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import inspect
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobdef.backends.records import ErrorInfo, Outcome
from jobdef.runtime.classify import class_name, exception_names
from jobdef.runtime.context import Context
from jobdef.runtime.payloads import truncated


class AttemptAbandoned(BaseException):
    """Raised in a handler's thread once its attempt has timed out: stop now."""


@dataclass(frozen=True, slots=True)
class Ran:
    """How an attempt ended: it returned, raised (``error_*``), or ran past its deadline."""

    timed_out: bool = False
    error_type: str | None = None
    message: str = ""
    traceback: str = ""
    names: tuple[str, ...] = ()
    # What the handler returned (when it returned).
    result: Any = None

    @property
    def failed(self) -> bool:
        return self.timed_out or self.error_type is not None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a job as the store recorded it, on the virtual clock.

    ``offset``: seconds from the enqueue (the job's ``created_at``) to the start,
    what ``jobdef explain``'s timeline rows give as earliest/latest start.
    """

    job_id: int
    job: str
    number: int
    started_at: float
    finished_at: float | None
    offset: float
    outcome: Outcome | None
    error: ErrorInfo | None


def _raised(exc: BaseException) -> Ran:
    try:
        message = str(exc)
    except Exception:
        message = f"<{type(exc).__name__} whose str() raised>"
    text = "".join(traceback.format_exception(exc))
    return Ran(
        error_type=class_name(type(exc)),
        message=truncated(message),
        traceback=truncated(text, keep_end=True),
        names=exception_names(exc),
    )


def run_attempt(
    handler: Callable[..., Any], ctx: Context, args: dict[str, Any], deadline: float
) -> Ran:
    """Call ``handler(ctx, **args)`` in a new thread and wait at most ``deadline`` seconds."""
    outcome: list[Ran] = []

    def call() -> None:
        try:
            result = handler(ctx, **args)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
        except AttemptAbandoned:
            raise
        except BaseException as exc:  # a handler's SystemExit is a failed attempt too
            outcome.append(_raised(exc))
            return
        outcome.append(Ran(result=result))

    def target() -> None:
        # The stop request may arrive anywhere in call(), even after the handler
        # returned: it must never escape the thread (an unhandled thread exception).
        with contextlib.suppress(AttemptAbandoned):
            call()

    thread = threading.Thread(target=target, name=f"jobdef-attempt-{ctx.job_id}", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        _abandon(thread)
        return Ran(timed_out=True)
    return outcome[0] if outcome else Ran(timed_out=True)


async def _awaited(result: Any) -> Any:
    return await result


def _abandon(thread: threading.Thread) -> None:
    """Ask a handler's thread to stop (best effort; see the module's docstring)."""
    if thread.ident is None:
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread.ident), ctypes.py_object(AttemptAbandoned)
    )
