"""Hostile clients of a port, for the tests of the servers jobdef opens: connections
that never send a byte, and the descriptors a process holds."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator


def open_fds(pid: int) -> int:
    """How many descriptors process ``pid`` holds."""
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextlib.contextmanager
def idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections to ``port`` that never send a byte, held until the end."""
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        yield held
    finally:
        for sock in held:
            sock.close()
