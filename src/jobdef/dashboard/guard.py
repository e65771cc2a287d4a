"""The outermost layer of the dashboard: credentials and the security headers.

It wraps every response the app sends, the static files included, so no path
answers without the credentials (when configured) or without the
Content-Security-Policy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import Response

from jobdef.dashboard.security import SECURITY_HEADERS, Auth

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Guard:
    """Asks for credentials (when configured) and adds the security headers."""

    def __init__(self, app: ASGIApp, auth: Auth | None) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.auth is not None:
            who = self.auth.who(headers.get("authorization"))
            if who is None:
                response = Response(
                    "authentication required\n",
                    status_code=401,
                    headers={"www-authenticate": self.auth.challenge, **SECURITY_HEADERS},
                    media_type="text/plain",
                )
                await response(scope, receive, send)
                return
        elif scope.get("jobdef_who"):
            # An application that mounts the dashboard and authenticated the caller
            # itself (jobdef.contrib.django.dashboard: a Django staff session) names them.
            who = str(scope["jobdef_who"])
        else:
            client = scope.get("client") or ("local", 0)
            who = f"anonymous@{client[0]}"
        scope["jobdef_who"] = who

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {k.lower() for k, _ in raw}
                for name, value in SECURITY_HEADERS.items():
                    if name.encode() not in present:
                        raw.append((name.encode(), value.encode()))
                message["headers"] = raw
            await send(message)

        await self.app(scope, receive, send_with_headers)
