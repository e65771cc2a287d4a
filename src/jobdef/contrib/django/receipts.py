"""The status endpoint of receipts as Django views, for the project's own pages.

In ``urls.py``::

    from django.urls import include, path
    from jobdef.contrib.django.receipts import receipt_urls

    urlpatterns = [..., path("api/", include(receipt_urls()))]

which answers ``GET /api/receipts/{token}`` (the job as its receipt shows it, one
JSON object) and ``GET /api/receipts/{token}/events`` (server-sent events: ``status``
at the start and on each change, then ``end`` when the job has ended, or ``gone``).
The jobs are those of the project's ``JobdefBackend`` (the first of ``TASKS``, or
``backend=``), titled by its sheets; a task's result is a ``TaskResult`` whose
``receipt`` holds the token to hand the page.

What the object holds is decided by :mod:`jobdef.runtime.receipt_view` from the
sheet, as the ASGI app (:mod:`jobdef.contrib.receipts`) decides it. Under ASGI
an event stream waits on the event loop; under WSGI it holds a thread of the
server while it is open. docs/receipts.md tells the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from django.urls import path

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
    events_sync,
    find,
    language,
    preflight_headers,
    vary,
)

log = logging.getLogger("jobdef.receipts")


def receipt_urls(
    *,
    backend: str | None = None,
    allow_origins: Iterable[str] | str = (),
    look_seconds: float = LOOK_SECONDS,
    stream_seconds: float = STREAM_SECONDS,
) -> list[Any]:
    """The two URL patterns, to ``include()`` under a prefix of the project's.

    ``backend``: the alias of the ``JobdefBackend`` in ``TASKS`` (default: the first).
    ``allow_origins``: the origins whose pages may read them from a browser (CORS; none
    by default). ``look_seconds`` and ``stream_seconds``: as for
    :func:`jobdef.contrib.receipts.receipt_app`.
    """
    origins = allowed_origins(allow_origins)
    varies = vary(origins)

    def queue() -> Queue:
        from jobdef.contrib.django.worker import project_backend

        found = project_backend(backend)
        if found is None:
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured(
                f"TASKS has no jobdef.contrib.django.JobdefBackend"
                f"{f' named {backend!r}' if backend else ''}; receipt_urls() reads its jobs"
            )
        return Queue(found.engine(), found.registry)

    def headers(request: Any, base: Any = HEADERS) -> dict[str, str]:
        return {**base, **cors_headers(request.headers.get("origin"), origins)}

    def refused(request: Any) -> HttpResponse | None:
        """The answer to a request that asks no receipt: a preflight, another method."""
        if request.method == "OPTIONS":
            return HttpResponse(status=204, headers=preflight_headers(headers(request)))
        if request.method not in ("GET", "HEAD"):
            return HttpResponse(
                METHOD_NOT_ALLOWED,
                status=405,
                headers={**headers(request), "allow": "GET"},
                content_type="application/json",
            )
        return None

    def not_found(request: Any) -> HttpResponse:
        return HttpResponse(
            NOT_FOUND, status=404, headers=headers(request), content_type="application/json"
        )

    def lookup(request: Any, jobs: Queue, token: str) -> Found | HttpResponse:
        """The job ``token`` names, or the answer when there is none to show."""
        try:
            found = find(jobs, token)
        except JobdefError as exc:
            log.warning("receipt endpoint: the job store cannot be read: %s", exc)
            return HttpResponse(
                UNAVAILABLE,
                status=503,
                headers={**headers(request), "retry-after": "5"},
                content_type="application/json",
            )
        return not_found(request) if found is None else found

    def status(request: Any, token: str) -> HttpResponse:
        answer = refused(request)
        if answer is not None:
            return answer
        jobs = queue()
        found = lookup(request, jobs, token)
        if isinstance(found, HttpResponse):
            return found
        lang = language(request.headers.get("accept-language"))
        return HttpResponse(
            body_text(found, jobs, lang),
            headers={**headers(request), "content-language": lang, "vary": varies},
            content_type="application/json",
        )

    def events(request: Any, token: str) -> HttpResponse | StreamingHttpResponse:
        answer = refused(request)
        if answer is not None:
            return answer
        jobs = queue()
        found = lookup(request, jobs, token)
        if isinstance(found, HttpResponse):
            return found
        lang = language(request.headers.get("accept-language"))
        stream = events_async if _under_asgi(request) else events_sync
        chunks = stream(
            jobs, token, lang, found, look_seconds=look_seconds, stream_seconds=stream_seconds
        )
        return StreamingHttpResponse(
            chunks,
            headers={**headers(request, STREAM_HEADERS), "content-language": lang, "vary": varies},
            content_type="text/event-stream",
        )

    return [
        path("receipts/<str:token>", status, name="jobdef-receipt"),
        path("receipts/<str:token>/events", events, name="jobdef-receipt-events"),
    ]


def _under_asgi(request: Any) -> bool:
    """Whether Django serves ``request`` through ASGI (an event loop streams it)."""
    from django.core.handlers.asgi import ASGIRequest

    return isinstance(request, ASGIRequest)
