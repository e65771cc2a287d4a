"""A pipe that ends a wait at once, from another thread or from a signal handler.

A wait on files (``select``, ``poll``) watches the pipe's read end beside what it
waits for; :meth:`WakePipe.wake` writes a byte to it, and the waiter, woken, reads
them all with :meth:`WakePipe.drain`. The worker's wait on its handler processes
ends this way when a stop is requested (a signal handler's write ends the ``poll`` it
interrupted), and so does its wait for the PostgreSQL engine's notifications of new
jobs (``Listener.wake``).
"""

from __future__ import annotations

import contextlib
import os
import threading


class WakePipe:
    """A non-blocking pipe, opened at its first use in each process (a forked child
    opens its own: one inherited would wake the parent's waits too). After
    :meth:`close`, :meth:`wake` does nothing (from another thread it would write to a
    file number that may name another file by then); a new wait (:meth:`fileno`)
    opens a new pipe."""

    def __init__(self) -> None:
        self._fds: tuple[int, int] | None = None
        self._pid = 0
        self._closed = False
        # Re-entrant: a signal handler may wake the pipe in the thread that is closing it.
        self._lock = threading.RLock()

    def fileno(self) -> int:
        """The read end, which a wait watches (readable once woken)."""
        return self._pipe()[0]

    def wake(self) -> None:
        """End the wait on :meth:`fileno` at once, or the next one if none is under way.
        Never blocks (a full pipe is woken already)."""
        with self._lock:
            if self._closed:
                return
            with contextlib.suppress(BlockingIOError, OSError):
                os.write(self._pipe()[1], b"!")

    def drain(self) -> bool:
        """Read every byte written so far; True when there was any (it was woken)."""
        with self._lock:
            fds = self._fds if self._pid == os.getpid() else None
            woken = False
            with contextlib.suppress(BlockingIOError, OSError):
                while fds is not None and os.read(fds[0], 512):
                    woken = True
            return woken

    def close(self) -> None:
        with self._lock:
            self._closed = True
            fds, self._fds = self._fds, None
            if fds is not None and self._pid == os.getpid():
                for fd in fds:
                    os.close(fd)

    def _pipe(self) -> tuple[int, int]:
        with self._lock:
            self._closed = False
            if self._fds is None or self._pid != os.getpid():
                read_fd, write_fd = os.pipe()
                os.set_blocking(read_fd, False)
                os.set_blocking(write_fd, False)
                self._fds, self._pid = (read_fd, write_fd), os.getpid()
            return self._fds
