"""Live updates: a server-sent event stream that says *that* the store changed.

The stream looks at the store every ``poll_seconds`` (both engines poll:
PostgreSQL's notify channel tells of enqueues only, not of the transitions a
page shows) and sends ``change`` when the fingerprint moved; the page's script
then fetches the page again. A comment line keeps a quiet stream open.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from jobdef.dashboard import views
from jobdef.dashboard.site import Dashboard
from jobdef.errors import JobdefError

# A comment line this often keeps proxies from closing a quiet event stream.
KEEPALIVE_SECONDS = 15.0


def events_endpoint(d: Dashboard) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        # The first look comes before the response starts: the browser reports the
        # stream open when its headers arrive, and a change made after that moment
        # must differ from the baseline, not be part of it.
        baseline = await _look(d)
        # The page names the fingerprint it was rendered at: a change between its
        # rendering and this request is sent at once.
        since = request.query_params.get("since")
        stale = baseline is not None and since is not None and since != views.token(baseline)
        return StreamingResponse(
            _stream(d, request, baseline, stale),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    return endpoint


async def _look(d: Dashboard) -> tuple[Any, ...] | None:
    """The store's fingerprint, or None while the store cannot be read."""
    try:
        return await run_in_threadpool(views.fingerprint, d.store)
    except JobdefError:
        return None


async def _stream(
    d: Dashboard, request: Request, baseline: tuple[Any, ...] | None, stale: bool
) -> AsyncIterator[str]:
    """A ``change`` event each time the store's fingerprint moves, checked every poll."""
    last = baseline
    quiet_since = time.monotonic()
    yield "retry: 3000\n\n"
    if stale:
        yield "event: change\ndata: {}\n\n"
    while not await request.is_disconnected():
        await asyncio.sleep(d.poll_seconds)
        current = await _look(d)
        if last is not None and current is not None and current != last:
            yield "event: change\ndata: {}\n\n"
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_SECONDS:
            yield ": keepalive\n\n"
            quiet_since = time.monotonic()
        if current is not None:
            last = current
