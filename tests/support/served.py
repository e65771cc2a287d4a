"""Servers in a thread of the test process, on a loopback port of their own: an ASGI app
served by uvicorn (what the dashboard's and the receipt endpoint's tests talk HTTP to),
and the standard library's socketserver servers (the receivers tests deliver to)."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from typing import Any

# How often a socketserver server looks whether shutdown() was called. Its default,
# half a second, is what every stop of a test's receiver would wait.
SHUTDOWN_POLL = 0.02


def serve_in_thread(server: socketserver.BaseServer) -> threading.Thread:
    """Serve ``server`` in a daemon thread until ``server.shutdown()``, which then
    returns within :data:`SHUTDOWN_POLL`; the thread."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True
    )
    thread.start()
    return thread


class Served:
    """An ASGI app served by uvicorn in a thread, on a loopback port of its own."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        # IPPROTO_TCP named, not left 0: asyncio turns Nagle off (TCP_NODELAY) only on
        # sockets whose proto says TCP, and with Nagle on, each answer on a kept-alive
        # connection waits for the client's delayed ACK (some 40 ms a request).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.store_url = ""
        # An open event stream holds the shutdown this long at most.
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=0.3)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive(), "uvicorn stopped at start-up"
            assert time.monotonic() < deadline, "uvicorn did not start in 30 s"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()
