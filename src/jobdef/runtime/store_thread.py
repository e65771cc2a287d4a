"""A worker's turn with the store, run on a thread of its own while the loop goes on.

A turn (complete what finished, claim what comes next: one statement on
PostgreSQL) keeps the worker's loop waiting on the server for as long as the
server takes to write it. Meanwhile the loop could be reading its handler
processes' results and handing them their next tasks; without that, the loop's
own work and the server's take turns, and each waits for the other (on a 2-core
machine, a no-op drain kept the loop waiting 45% of its time, and the machine
half idle).

So the loop hands the call to :class:`StoreThread` and carries on; it takes the
answer at a later turn, and only then changes what it holds (the calls see none of
the loop's state, only what they were given). One turn at a time: the next starts
once the last was taken. The engine must take calls from two threads: the
PostgreSQL engine runs every verb under its session's lock, so a heartbeat or a
failure the loop records meanwhile waits for the turn, and runs after it.

The thread writes a byte to a pipe when the call returns, so the loop's wait on its
handler processes (``Pool.poll``) ends then too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class StoreThread(Generic[T]):
    """Runs one call at a time on a thread of its own; the caller takes its answer later."""

    def __init__(self) -> None:
        self._ready_r, self._ready_w = os.pipe()
        os.set_blocking(self._ready_r, False)
        self._call: Callable[[], T] | None = None
        self._answer: T | None = None
        self._error: BaseException | None = None
        self._asked = threading.Condition()
        self._done = threading.Event()
        self._busy = False
        self._closing = False
        self._thread = threading.Thread(target=self._serve, name="jobdef-store", daemon=True)
        self._thread.start()

    @property
    def fd(self) -> int:
        """Readable once the call in flight has returned (the loop polls it)."""
        return self._ready_r

    @property
    def busy(self) -> bool:
        """Whether a call was started and its answer not taken yet."""
        return self._busy

    def start(self, call: Callable[[], T]) -> None:
        """Run ``call`` on the thread (one call at a time: the last answer was taken)."""
        if self._busy:
            raise RuntimeError("a store call is already in flight")
        self._busy = True
        self._done.clear()
        with self._asked:
            self._call = call
            self._asked.notify()

    def done(self) -> bool:
        """Whether the call in flight has returned."""
        return self._busy and self._done.is_set()

    def take(self) -> T:
        """The answer of the call in flight, waiting for it; re-raises what it raised."""
        if not self._busy:
            raise RuntimeError("no store call is in flight")
        self._done.wait()
        self._busy = False
        while True:  # the pipe's byte(s): the next wait must not end at once
            try:
                if not os.read(self._ready_r, 64):
                    break
            except BlockingIOError:
                break
        answer, error = self._answer, self._error
        self._answer = self._error = None
        if error is not None:
            raise error
        return answer  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the thread (after the call in flight, if any, returned)."""
        with self._asked:
            self._closing = True
            self._asked.notify()
        self._thread.join()
        for fd in (self._ready_r, self._ready_w):
            os.close(fd)

    def _serve(self) -> None:
        while True:
            with self._asked:
                while self._call is None and not self._closing:
                    self._asked.wait()
                if self._call is None:
                    return
                call, self._call = self._call, None
            try:
                self._answer = call()
            except BaseException as exc:  # re-raised in the loop by take()
                self._error = exc
            self._done.set()
            os.write(self._ready_w, b"\0")
