"""An ASGI app served by uvicorn in a thread of the test process, on a loopback port of
its own: what the dashboard's and the receipt endpoint's tests talk HTTP to."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


class Served:
    """An ASGI app served by uvicorn in a thread, on a loopback port of its own."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
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
