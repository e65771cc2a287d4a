"""A total deadline for one delivery: connect, send and read together.

A socket timeout bounds each read, not the whole exchange: a receiver that
trickles one header line a second never trips a 10 s timeout and can keep a
delivery busy for as long as it likes. :class:`Deadline` arms a timer for the
whole delivery; when it fires, every socket the delivery registered with
:meth:`Deadline.watch` is shut down, which wakes the blocked read at once, and
:attr:`Deadline.expired` tells the sender to report the timeout rather than the
broken connection it causes.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType


class Deadline:
    """``with Deadline(seconds) as deadline:`` around one delivery."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._end = 0.0

    def __enter__(self) -> Deadline:
        self._end = time.monotonic() + self.seconds
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def remaining(self) -> float:
        """Seconds left, at least a little (a socket timeout of 0 would mean non-blocking)."""
        return max(0.01, self._end - time.monotonic())

    def watch(self, sock: socket.socket | None) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has passed)."""
        if sock is None:
            return
        # A duplicate of the connection, so it stays reachable when a TLS wrapper takes
        # over (and detaches) the socket object during the handshake.
        copy = socket.fromfd(sock.fileno(), sock.family, sock.type)
        with self._lock:
            self._sockets.append(copy)
            if not self.expired:
                return
        _shutdown(copy)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
