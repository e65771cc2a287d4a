"""The status endpoint of receipts as an ASGI application, for the application's own screen.

Mount it where the application's pages can reach it::

    from starlette.routing import Mount
    from jobdef.contrib.receipts import receipt_app

    queue = connect("postgresql://...", load_registry(["jobdefs"]))
    app = Starlette(routes=[..., Mount("/api", receipt_app(queue))])

It answers two requests, and nothing else (every other path is the same 404):

- ``GET /receipts/{token}``: the job as its receipt shows it, one JSON object;
- ``GET /receipts/{token}/events``: server-sent events, ``status`` with that object
  at the start and on each change, then ``end`` when the job has ended (or ``gone``
  when it was pruned meanwhile), and the stream closes.

What the object holds, and what it never holds, is decided by
:mod:`jobdef.runtime.receipt_view` from the job's sheet. Every answer says
``Cache-Control: no-store``. CORS is off: give ``allow_origins`` (exact origins,
e.g. ``["https://shop.example"]``) when pages of another origin read it.
Needs ``jobdef[dashboard]`` (Starlette). docs/receipts.md tells the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from jobdef.errors import JobdefError
from jobdef.runtime.queue import Queue
from jobdef.runtime.receipt_view import (
    HEADERS,
    LOOK_SECONDS,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    STREAM_HEADERS,
    STREAM_SECONDS,
    UNAVAILABLE,
    Found,
    allowed_origins,
    body_text,
    cors_headers,
    events_async,
    find,
    language,
    preflight_headers,
    vary,
)

log = logging.getLogger("jobdef.receipts")


def receipt_app(
    queue: Queue,
    *,
    allow_origins: Iterable[str] | str = (),
    look_seconds: float = LOOK_SECONDS,
    stream_seconds: float = STREAM_SECONDS,
) -> Starlette:
    """The endpoint of the receipts of ``queue``'s store, titled by its sheets.

    ``allow_origins``: the origins whose pages may read it from a browser (CORS; none
    by default, ``"*"`` any). ``look_seconds``: how often an event stream reads its
    job for the changes before its end (the end itself is heard at once).
    ``stream_seconds``: how long one stream stays open at most (the browser then
    opens another).
    """
    origins = allowed_origins(allow_origins)
    varies = vary(origins)

    def headers(request: Request, base: Any = HEADERS) -> dict[str, str]:
        return {**base, **cors_headers(request.headers.get("origin"), origins)}

    def not_found(request: Request) -> Response:
        return Response(NOT_FOUND, 404, headers=headers(request), media_type="application/json")

    async def lookup(request: Request) -> Found | Response:
        """The job the path's token names, or the answer when there is none to show."""
        try:
            found = await run_in_threadpool(find, queue, request.path_params["token"])
        except JobdefError as exc:
            log.warning("receipt endpoint: the job store cannot be read: %s", exc)
            return Response(
                UNAVAILABLE,
                503,
                headers={**headers(request), "retry-after": "5"},
                media_type="application/json",
            )
        return not_found(request) if found is None else found

    async def status(request: Request) -> Response:
        if request.method == "OPTIONS":
            return preflight(request)
        found = await lookup(request)
        if isinstance(found, Response):
            return found
        lang = language(request.headers.get("accept-language"))
        text = body_text(found, queue, lang)
        answer = {**headers(request), "content-language": lang, "vary": varies}
        return Response(text, headers=answer, media_type="application/json")

    async def events(request: Request) -> Response:
        if request.method == "OPTIONS":
            return preflight(request)
        found = await lookup(request)
        if isinstance(found, Response):
            return found
        lang = language(request.headers.get("accept-language"))
        stream = events_async(
            queue,
            request.path_params["token"],
            lang,
            found,
            look_seconds=look_seconds,
            stream_seconds=stream_seconds,
        )
        answer = {**headers(request, STREAM_HEADERS), "content-language": lang, "vary": varies}
        return StreamingResponse(stream, headers=answer, media_type="text/event-stream")

    def preflight(request: Request) -> Response:
        return Response(status_code=204, headers=preflight_headers(headers(request)))

    async def refused(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException) and exc.status_code == 405:
            return Response(
                METHOD_NOT_ALLOWED,
                405,
                headers={**headers(request), "allow": "GET"},
                media_type="application/json",
            )
        return not_found(request)

    routes = [
        Route("/receipts/{token}", status, methods=["GET", "OPTIONS"]),
        Route("/receipts/{token}/events", events, methods=["GET", "OPTIONS"]),
    ]
    app = Starlette(routes=routes, exception_handlers={404: refused, 405: refused})
    # "/receipts/x/" is not found like any other path, never redirected to "/receipts/x".
    app.router.redirect_slashes = False
    return app
