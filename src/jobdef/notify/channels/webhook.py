"""The ``webhook`` channel: an HTTP POST of JSON to a URL read from the environment.

``format: json`` posts the message's full JSON document; ``slack``/``chat``
post ``{"text": ...}``, which chat incoming webhooks accept. Every request
carries an ``X-Jobdef-Message-Id`` header (also in the JSON body) so the
receiver can drop a copy. TLS certificates are verified; redirects are not
followed (a redirected POST would silently become a GET); only ``http`` and
``https`` URLs are used. The channel's ``timeout`` is a total deadline for the
delivery (connect, send and read), so a receiver that trickles its answer cannot
hold the channel longer. The URL is a secret (chat webhook URLs grant posting
rights and hold their secret in the path, ``/services/T000/B000/XXXX``), so an
error names it by its origin alone (:func:`jobdef.redact.url_origin`,
``https://hooks.slack.com``), and any piece of its path or query in the text a
receiver or a library wrote (``no such hook /services/T000/B000/XXXX``) is masked:
what the outbox stores, the worker logs and the dashboard shows never holds it.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from jobdef import __version__
from jobdef.errors import DeliveryError
from jobdef.notify.deadline import Deadline
from jobdef.notify.message import Message
from jobdef.policy.channels import WebhookSettings
from jobdef.redact import redact, url_origin, url_path_secrets

FORMATS = ("json", "slack", "chat")
_BODY_EXCERPT = 200


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _watched(base: type[http.client.HTTPConnection], deadline: Deadline) -> Any:
    """``base`` whose sockets ``deadline`` shuts down when it passes (the TLS handshake too:
    the raw socket is watched as soon as it is connected)."""

    class Connection(base):  # type: ignore[valid-type,misc]
        _create_connection: Callable[..., socket.socket]  # as http.client sets it

        def connect(self) -> None:
            self.timeout = deadline.remaining()
            create = self._create_connection

            def create_and_watch(*args: Any, **kwargs: Any) -> socket.socket:
                sock = create(*args, **kwargs)
                deadline.watch(sock)
                return sock

            self._create_connection = create_and_watch
            super().connect()

    return Connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self.deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline, context: ssl.SSLContext) -> None:
        super().__init__(context=context)
        self.deadline = deadline
        self.context = context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = _watched(http.client.HTTPSConnection, self.deadline)
        return self.do_open(connection, req, context=self.context)


class WebhookSender:
    """POSTs each message as JSON; any answer but 2xx is a failed delivery.

    ``timeout`` bounds the whole delivery (connect, send, read), not each read.
    """

    def __init__(
        self,
        url: str,
        format: str = "json",
        headers: dict[str, str] | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.format = format
        self.headers = headers or {}
        self.timeout = timeout
        self._context = ssl.create_default_context()
        # The one part of the URL any text holds: scheme://host[:port].
        self.origin = url_origin(url)
        self._secrets = [*url_path_secrets(url), *self.headers.values()]

    def body(self, message: Message) -> dict[str, Any]:
        if self.format == "json":
            return message.as_json()
        if self.format == "slack":
            # Slack reads <...> as links and mentions: escape the three control characters.
            return {"text": slack_escape(message.text)}
        return {"text": message.text}

    def send(self, message: Message) -> None:
        data = json.dumps(self.body(message), ensure_ascii=False, default=str).encode()
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": f"jobdef/{__version__}",
            **self.headers,
            "X-Jobdef-Message-Id": message.message_id,
        }
        with Deadline(self.timeout) as deadline:
            try:
                request = urllib.request.Request(
                    self.url, data=data, headers=headers, method="POST"
                )
                opener = urllib.request.build_opener(
                    _NoRedirect(), _HTTPHandler(deadline), _HTTPSHandler(deadline, self._context)
                )
                with opener.open(request, timeout=self.timeout) as response:
                    response.read(_BODY_EXCERPT)
                if deadline.expired:  # cut short: the answer read may be a truncated one
                    raise TimeoutError
            except urllib.error.HTTPError as exc:
                try:
                    answer = exc.read(_BODY_EXCERPT).decode("utf-8", "replace").strip()
                except Exception:  # the receiver's answer is not ours to trust
                    answer = ""
                raise DeliveryError(
                    f"webhook {self.origin} answered HTTP {exc.code} {self.scrub(str(exc.reason))}"
                    + (f": {self.scrub(answer)}" if answer else "")
                ) from None
            except Exception as exc:
                if deadline.expired:
                    raise DeliveryError(
                        f"webhook {self.origin} did not answer within the channel timeout of "
                        f"{self.timeout:g}s (connect, send and read together)"
                    ) from None
                if isinstance(exc, urllib.error.URLError):
                    text = f"unreachable: {self.scrub(str(exc.reason))}"
                else:
                    text = f"request failed: {type(exc).__name__}: {self.scrub(str(exc))}"
                raise DeliveryError(f"webhook {self.origin} {text}") from None

    def scrub(self, text: str) -> str:
        """``text`` (a receiver's answer, a library's message, a traceback) without the URL
        past its origin, any piece of its path or query, or a header value."""
        marker = "\x00\x01\x00"  # in no piece of a URL (no control character passes)
        text = text.replace(self.url, marker)
        return redact(text, self._secrets).replace(marker, self.origin)


def build(settings: WebhookSettings) -> WebhookSender:
    return WebhookSender(
        settings.url,
        format=settings.format,
        headers=dict(settings.headers),
        timeout=settings.timeout,
    )
