"""A stand-in for a chat service's incoming webhook, on loopback (the demo's ``ops-chat``).

It accepts ``{"text": ...}`` posts, as chat incoming webhooks do, and keeps
each text with the message id header, so the demo can show what arrived.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatReceiver:
    """An HTTP server in a thread on 127.0.0.1; ``received`` holds (message id, text) pairs."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                text = str(json.loads(body or b"{}").get("text", ""))
                outer.received.append((self.headers.get("X-Jobdef-Message-Id", ""), text))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/chat-webhook"

    def __enter__(self) -> ChatReceiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
