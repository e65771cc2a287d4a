"""Real servers on loopback that the notification tests deliver to."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.served import serve_in_thread


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Received:
    """One request the webhook server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class WebhookServer:
    """An HTTP server in a thread that records every POST; ``status`` is what it answers."""

    port: int = field(default_factory=free_port)
    status: int = 200
    received: list[Received] = field(default_factory=list)
    # Set to hold each request until released (to kill a sender mid-delivery).
    gate: threading.Event | None = None
    # Serve HTTPS with this context.
    tls: ssl.SSLContext | None = None
    # The path (and query) of the URL: a chat webhook holds its secret there.
    path: str = "/hook"
    # Answer a refusal with a body that quotes the path, as some receivers do.
    quote_path: bool = False
    # The body of each answer (Slack answers "ok", or the reason of a refusal).
    answer: str = "ok"
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}{self.path}"

    def start(self) -> WebhookServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.received.append(Received(self.path, dict(self.headers), body))
                if outer.gate is not None:
                    outer.gate.wait(30)
                answer = outer.answer.encode()
                if outer.quote_path and outer.status >= 300:
                    answer = f"no such hook {self.path}".encode()
                self.send_response(outer.status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        serve_in_thread(self._server)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def message_ids(self) -> list[str]:
        ids = []
        for request in self.received:
            body = request.body
            items = body.get("events", [body])
            ids.extend(item["message_id"] for item in items)
        return ids


class SmtpServer:
    """An aiosmtpd server on loopback that keeps every mail it accepts."""

    def __init__(
        self,
        user: str | None = None,
        password: str | None = None,
        starttls: ssl.SSLContext | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        from aiosmtpd.controller import Controller

        self.port = free_port()
        self.messages: list[bytes] = []
        self.logins: list[str] = []
        outer = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                outer.messages.append(envelope.original_content or envelope.content)
                return "250 OK"

        options: dict[str, Any] = {}
        if user is not None:

            def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth: Any):
                from aiosmtpd.smtp import AuthResult

                ok = auth.login.decode() == user and auth.password.decode() == password
                if ok:
                    outer.logins.append(auth.login.decode())
                return AuthResult(success=ok)

            options = {"authenticator": authenticator, "auth_require_tls": False}
        if starttls is not None:
            options.update(tls_context=starttls, require_starttls=True)
        if tls is not None:
            options.update(ssl_context=tls)
        self._controller = Controller(Handler(), hostname="127.0.0.1", port=self.port, **options)

    def start(self) -> SmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()
