"""The ``webhook`` channel: an HTTP POST of JSON to a URL read from the environment.

``format: json`` posts the message's full JSON document; ``slack``/``chat``
post ``{"text": ...}``, which chat incoming webhooks accept. Every request
carries an ``X-Jobdef-Message-Id`` header (also in the JSON body) so the
receiver can drop a copy. TLS certificates are verified; redirects are not
followed (a redirected POST would silently become a GET); only ``http`` and
``https`` URLs are used. The URL is a secret (chat webhook URLs grant posting
rights), so no error text ever contains it.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from jobdef import __version__
from jobdef.errors import DeliveryError
from jobdef.notify.message import Message
from jobdef.policy.channels import WebhookSettings

FORMATS = ("json", "slack", "chat")
_BODY_EXCERPT = 200


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class WebhookSender:
    """POSTs each message as JSON; any answer but 2xx is a failed delivery."""

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
        self._opener = urllib.request.build_opener(
            _NoRedirect(), urllib.request.HTTPSHandler(context=ssl.create_default_context())
        )

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
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                response.read(_BODY_EXCERPT)
        except urllib.error.HTTPError as exc:
            excerpt = exc.read(_BODY_EXCERPT).decode("utf-8", "replace").strip()
            raise DeliveryError(
                f"webhook answered HTTP {exc.code} {exc.reason}"
                + (f": {self._redact(excerpt)}" if excerpt else "")
            ) from None
        except urllib.error.URLError as exc:
            raise DeliveryError(f"webhook unreachable: {self._redact(str(exc.reason))}") from None
        except (TimeoutError, OSError) as exc:
            raise DeliveryError(
                f"webhook request failed: {type(exc).__name__}: {self._redact(str(exc))}"
            ) from None

    def _redact(self, text: str) -> str:
        return text.replace(self.url, "<webhook url>")


def build(settings: WebhookSettings) -> WebhookSender:
    return WebhookSender(
        settings.url,
        format=settings.format,
        headers=dict(settings.headers),
        timeout=settings.timeout,
    )
