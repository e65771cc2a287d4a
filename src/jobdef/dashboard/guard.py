"""The outermost layer of the dashboard: the Host, credentials, the origin of a POST,
and the security headers.

It wraps every response the app sends, the static files and a server error
included, so no path answers a host it does not serve, without the credentials
(when configured) or without the Content-Security-Policy.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import Response

from jobdef.dashboard.security import SECURITY_HEADERS, Auth, HostCheck, foreign_post

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("jobdef.dashboard")


class Guard:
    """Refuses a foreign Host or a POST from another site, asks for credentials (when
    configured) and adds the security headers to every response."""

    def __init__(self, app: ASGIApp, auth: Auth | None, hosts: HostCheck) -> None:
        self.app = app
        self.auth = auth
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host")
        if not self.hosts.allows(host):
            # Before the credentials: a page that rebound its name to this address learns
            # nothing, not even whether it would need them.
            await refusal(400, self.hosts.refusal(host))(scope, receive, send)
            return
        if self.auth is not None:
            who = self.auth.who(headers.get("authorization"))
            if who is None:
                challenge = {"www-authenticate": self.auth.challenge}
                await refusal(401, "authentication required", challenge)(scope, receive, send)
                return
        elif scope.get("jobdef_who"):
            # An application that mounts the dashboard and authenticated the caller
            # itself (jobdef.contrib.django.dashboard: a Django staff session) names them.
            who = str(scope["jobdef_who"])
        else:
            client = scope.get("client") or ("local", 0)
            who = f"anonymous@{client[0]}"
        scope["jobdef_who"] = who
        if scope.get("method") == "POST" and (why := foreign_post(headers)) is not None:
            log.warning("%s: refused a POST to %s: %s", who, scope.get("path", ""), why)
            await refusal(403, f"{why}; post it from this dashboard's pages")(scope, receive, send)
            return

        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                raw = list(message.get("headers", []))
                present = {k.lower() for k, _ in raw}
                for name, value in SECURITY_HEADERS.items():
                    if name.encode() not in present:
                        raw.append((name.encode(), value.encode()))
                message["headers"] = raw
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            if not started:
                # The server's own 500 would carry none of the headers; the traceback
                # goes to the server's log (re-raised), never to the page.
                await refusal(500, "internal error; the server log says why")(scope, receive, send)
            raise


def refusal(status: int, line: str, headers: dict[str, str] | None = None) -> Response:
    """One line of text with the security headers."""
    return Response(
        line + "\n",
        status_code=status,
        headers={**(headers or {}), **SECURITY_HEADERS},
        media_type="text/plain",
    )
