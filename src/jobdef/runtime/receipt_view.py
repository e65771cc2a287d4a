"""What the status endpoint of a receipt shows, framework-free: the ASGI app
(:mod:`jobdef.contrib.receipts`) and the Django views
(:mod:`jobdef.contrib.django.receipts`) answer with what this module writes.

``GET /receipts/{token}`` answers one JSON object (:func:`receipt_body`) and
``GET /receipts/{token}/events`` a stream of server-sent events
(:class:`EventStream`): the object once at the start and again on each change,
then ``end`` when the job has ended (or ``gone`` when it was pruned meanwhile).

What a receipt's holder may learn is decided here alone, from the sheet:

- the state (accepted, running, retry_waiting with its next start, done, dead,
  failed, cancelled), its label in the caller's language (English or Japanese,
  from ``Accept-Language``), the sheet's title, attempts so far and the most,
  the progress the handler reported, and the times the job was accepted,
  started and finished;
- the result only when the sheet's ``result.public`` says so: all of it, or the
  named top-level fields of an object;
- the args whose schema says ``public: true``, none other;
- never the job's id, its name in code, its queue, worker, idempotency key,
  an error's class, message or traceback.

A token that cannot be one, a token no job holds and a job pruned since all get
the one :data:`NOT_FOUND` answer.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from jobdef.backends.records import Receipt
from jobdef.backends.rows import dump_json, looks_like_token
from jobdef.backends.waiters import job_waiters
from jobdef.errors import JobdefError
from jobdef.policy.model import JobPolicy
from jobdef.redact import public_names
from jobdef.runtime.receipts import ReceiptState, ReceiptStatus, receipt_status

Found = tuple[ReceiptStatus, dict[str, Any]]

LANGUAGES = ("en", "ja")
"""The languages of a label, the first the default."""

LABELS: Mapping[ReceiptState, tuple[str, str]] = {
    "accepted": ("Accepted", "受付済み"),
    "running": ("Running", "処理中"),
    "retry_waiting": ("Waiting to retry", "再試行待ち"),
    "done": ("Done", "完了"),
    "dead": ("Could not be completed", "処理できませんでした"),
    "failed": ("Failed", "失敗"),
    "cancelled": ("Cancelled", "取り消し"),
}

NOT_FOUND = '{"error":"not_found"}'
"""The body of every 404: unknown, pruned and malformed tokens alike."""

UNAVAILABLE = '{"error":"unavailable"}'
"""The body of a 503: the job store cannot be read now (the reason goes to the log only)."""

METHOD_NOT_ALLOWED = '{"error":"method_not_allowed"}'
"""The body of a 405: the endpoint answers GET (and preflights) only."""

HEADERS: Mapping[str, str] = {
    # A receipt's state changes: no cache, shared or private, keeps an answer.
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    # The token is in the URL: a page the answer were shown as must not pass it on.
    "referrer-policy": "no-referrer",
}

STREAM_HEADERS: Mapping[str, str] = {**HEADERS, "x-accel-buffering": "no"}

# Seconds between two reads of a watched job for the changes before its end (its end
# itself comes from the waiters at once).
LOOK_SECONDS = 1.0
# A comment line this often keeps proxies from closing a quiet stream.
KEEPALIVE_SECONDS = 15.0
# Seconds a stream stays open at most; the browser's EventSource then opens another.
STREAM_SECONDS = 30 * 60.0
# Milliseconds the browser waits before it opens the stream again after it was cut.
RETRY_MS = 3000


def language(accept_language: str | None) -> str:
    """The language of :data:`LANGUAGES` the caller prefers most (``Accept-Language``,
    with its q-values; ``ja-JP`` counts as ``ja``), else the first."""
    best, best_q = LANGUAGES[0], 0.0
    for index, part in enumerate((accept_language or "")[:1000].split(",")[:50]):
        tag, _, params = part.strip().partition(";")
        primary = tag.strip().lower().split("-")[0]
        if primary not in LANGUAGES:
            continue
        q = _quality(params)
        # Equal q: the one written first; a tiny bias keeps that order.
        if q > 0 and q - index * 1e-6 > best_q:
            best, best_q = primary, q - index * 1e-6
    return best


def _quality(params: str) -> float:
    for param in params.split(";"):
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                q = float(value)
            except ValueError:
                return 0.0
            return q if math.isfinite(q) and 0 <= q <= 1 else 0.0
    return 1.0


def find(queue: Any, token: str) -> Found | None:
    """The status of the job whose receipt is ``token`` and its public args, read by
    ``queue`` (a :class:`~jobdef.runtime.queue.Queue`) in one indexed read; None for
    every token that names no job, a text that cannot be a token included (it is not
    looked up). The index finds the row, the stored token is then compared in constant
    time (``Backend.find_receipt``)."""
    if not isinstance(token, str) or not looks_like_token(token):
        return None
    record = queue.backend.find_receipt(token)
    if record is None:
        return None
    status = receipt_status(record, queue.registry)
    return status, public_args(queue.registry.jobs.get(record.job), record.args)


def public_args(policy: JobPolicy | None, args: Mapping[str, Any]) -> dict[str, Any]:
    """The args a receipt may show: those whose schema says ``public: true``."""
    return {name: args[name] for name in sorted(public_names(policy, args))}


def public_result(policy: JobPolicy | None, status: ReceiptStatus) -> Any:
    """What a receipt may show of the job's result: per the sheet's ``result.public``,
    all of it, the named top-level fields of an object, or nothing (None)."""
    if policy is None or status.state != "done" or status.result is None:
        return None
    shown = policy.result.public
    if shown is True:
        return status.result
    if not shown or not isinstance(status.result, Mapping):
        return None
    return {name: status.result[name] for name in shown if name in status.result}


def receipt_body(
    status: ReceiptStatus, policy: JobPolicy | None, args: Mapping[str, Any], lang: str
) -> dict[str, Any]:
    """The JSON object of a receipt (see the module for what it holds and never holds)."""
    english, japanese = LABELS[status.state]
    return {
        "state": status.state,
        "ended": status.ended,
        "label": japanese if lang == "ja" else english,
        "lang": lang,
        # The sheet has one title, written in the team's language: it is shown as written
        # whatever the caller's language (the label is what jobdef translates).
        "title": status.title,
        "attempts": status.attempts,
        "max_attempts": status.max_attempts,
        "progress": status.progress,
        "next_start": status.next_start,
        "created_at": status.created_at,
        "started_at": status.started_at,
        "finished_at": status.finished_at,
        "result": public_result(policy, status),
        "args": dict(args),
    }


def body_text(found: Found, queue: Any, lang: str) -> str:
    """:func:`receipt_body` as the text of a response or an event."""
    status, args = found
    return dump_json(receipt_body(status, queue.registry.jobs.get(status.job), args, lang))


def cors_headers(origin: str | None, allowed: Iterable[str]) -> dict[str, str]:
    """The CORS headers for a request from ``origin``: none unless it is one of
    ``allowed`` (exactly, scheme and port included; ``"*"`` allows any page)."""
    allowed = tuple(allowed)
    if not origin or not allowed:
        return {}
    if "*" in allowed:
        return {"access-control-allow-origin": "*"}
    if origin not in allowed:
        return {"vary": "Origin"}
    return {"access-control-allow-origin": origin, "vary": "Origin"}


def preflight_headers(headers: dict[str, str]) -> dict[str, str]:
    """The headers of the answer to a preflight: ``headers`` (the request's CORS
    headers among them), with what it may ask when its origin is allowed."""
    if "access-control-allow-origin" not in headers:
        return headers
    return {
        **headers,
        "access-control-allow-methods": "GET",
        "access-control-allow-headers": "accept, accept-language, cache-control",
        "access-control-max-age": "600",
    }


def vary(origins: Iterable[str]) -> str:
    """The ``Vary`` header of an answer that tells a receipt (CORS adds ``Origin``)."""
    return "Accept-Language, Origin" if tuple(origins) else "Accept-Language"


def allowed_origins(origins: Iterable[str] | str) -> tuple[str, ...]:
    """``origins`` as given to an app or view (one string or several)."""
    return (origins,) if isinstance(origins, str) else tuple(origins)


def event(name: str, data: str) -> str:
    """One server-sent event (``data`` is one line of JSON)."""
    return f"event: {name}\ndata: {data}\n\n"


class EventStream:
    """The text of one event stream, framework-free: :meth:`start` with the job as first
    found, :meth:`look` with each newer read (None: the job is gone), :meth:`keepalive`
    between; :attr:`done` says the stream is over. :func:`events_async` and
    :func:`events_sync` drive it."""

    def __init__(self, queue: Any, lang: str) -> None:
        self.queue = queue
        self.lang = lang
        self.job_id = 0
        self.last = ""
        self.done = False
        self.quiet_since = time.monotonic()

    def start(self, found: Found) -> str:
        self.job_id = found[0].job_id
        return f"retry: {RETRY_MS}\n\n" + self.look(found)

    def look(self, found: Found | None) -> str:
        """The events for the job as just read: its status when it changed, then ``end``
        when it has ended; ``gone`` when it was pruned (or never held this token)."""
        if found is None:
            self.done = True
            return event("gone", "{}")
        text = body_text(found, self.queue, self.lang)
        out = ""
        if text != self.last:
            out = event("status", text)
            self.last = text
        if found[0].ended:
            self.done = True
            out += event("end", text)
        if out:
            self.quiet_since = time.monotonic()
        return out

    def keepalive(self) -> str:
        """A comment line when the stream was quiet for :data:`KEEPALIVE_SECONDS`."""
        if time.monotonic() - self.quiet_since < KEEPALIVE_SECONDS:
            return ""
        self.quiet_since = time.monotonic()
        return ": keepalive\n\n"


async def events_async(
    queue: Any,
    token: str,
    lang: str,
    first: Found,
    *,
    look_seconds: float = LOOK_SECONDS,
    stream_seconds: float = STREAM_SECONDS,
) -> AsyncIterator[str]:
    """The events of the job ``first`` (as :func:`find` read it) until it ends.

    Its end comes from ``Queue.wait_async``: one waiter for the whole stream, woken by the
    store (PostgreSQL) or the waiters' shared poll (SQLite), so the ``end`` event follows
    the job's end at once. The changes before it (accepted -> running, progress) are
    read once per ``look_seconds``: one indexed read of one row, never a busy loop.
    """
    stream = EventStream(queue, lang)
    yield stream.start(first)
    if stream.done:
        return
    receipt = Receipt(stream.job_id, token, created=False)
    waiting = asyncio.ensure_future(queue.wait_async(receipt, stream_seconds))
    try:
        while not stream.done:
            heard, _ = await asyncio.wait({waiting}, timeout=look_seconds)
            if heard:
                status = waiting.result()
                if status is not None and not status.ended:
                    return  # the stream's time is up: the browser opens another
                # The job as it ended (None: gone), its args as they were.
                yield stream.look(None if status is None else (status, first[1]))
                return
            try:
                found = await asyncio.to_thread(find, queue, token)
            except JobdefError:  # the store is out of reach for now: look again later
                text = stream.keepalive()
            else:
                text = stream.look(found) or stream.keepalive()
            if text:
                yield text
    finally:
        waiting.cancel()


def events_sync(
    queue: Any,
    token: str,
    lang: str,
    first: Found,
    *,
    look_seconds: float = LOOK_SECONDS,
    stream_seconds: float = STREAM_SECONDS,
) -> Iterator[str]:
    """:func:`events_async` for a server without an event loop (Django under WSGI): the
    same events, the end heard through the same waiters, the thread held meanwhile."""
    stream = EventStream(queue, lang)
    yield stream.start(first)
    if stream.done:
        return
    hub = job_waiters(queue.backend.url)
    heard = threading.Event()
    watch = hub.watch(stream.job_id, lambda _record: heard.set())
    closes_at = time.monotonic() + stream_seconds
    try:
        while not stream.done and time.monotonic() < closes_at:
            heard.wait(look_seconds)
            try:
                text = stream.look(find(queue, token)) or stream.keepalive()
            except JobdefError:  # the store is out of reach for now: look again later
                text = stream.keepalive()
            if text:
                yield text
            if heard.is_set() and not stream.done:  # ended, and requeued since
                heard.clear()
                watch = hub.watch(stream.job_id, lambda _record: heard.set())
    finally:
        hub.unwatch(watch)
