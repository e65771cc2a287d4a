"""Live updates: a server-sent event stream that says *that* the store changed.

The stream sends ``change`` when the store's fingerprint moved; the page's
script then fetches the page again. When to look at the fingerprint depends
on the engine:

- An engine that tells of changes
  (:class:`~jobdef.backends.protocol.ListensForChanges`; PostgreSQL, whose
  engines notify a channel of their own at most once per quarter second when
  they moved something, and whose enqueues notify the workers' channel): on
  notification. One watcher per dashboard (:class:`Hub`), opened with the first
  open stream and closed with the last, hears them for every stream.
  Each stream looks at most once per :data:`DEBOUNCE_SECONDS`, so a burst of
  transitions comes out as one ``change`` per half second, and once per
  :data:`SAFETY_SECONDS` anyway (a process of an older jobdef notifies
  nothing). While the watcher does not hear (its session is lost), the streams
  poll every ``poll_seconds`` until it listens again, and look once when it does.
- Any other engine (SQLite, which has no notification between processes): on a
  change seen by polling. One thread per dashboard (:class:`Poller`), started with
  the first open stream and stopped with the last, looks every ``poll_seconds``
  and wakes every stream when the fingerprint moved, so the store is read once per
  poll however many tabs are open; each stream also looks once per
  :data:`SAFETY_SECONDS`, and polls itself while the poller cannot read the store.

A comment line keeps a quiet stream open.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from jobdef.backends import listen_for_changes
from jobdef.backends.protocol import Watcher
from jobdef.dashboard import views
from jobdef.dashboard.site import Dashboard
from jobdef.errors import JobdefError

# A comment line this often keeps proxies from closing a quiet event stream.
KEEPALIVE_SECONDS = 15.0
# Seconds between two looks of one stream at the store: a burst gives one change.
DEBOUNCE_SECONDS = 0.5
# Seconds between two looks while listening, notification or not.
SAFETY_SECONDS = 30.0


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
    """A ``change`` event each time the store's fingerprint moves, looked at when the
    hub wakes the stream (a notification, or the poller saw a change), once per
    SAFETY_SECONDS anyway, and every poll while the hub cannot; at most once per
    debounce interval."""
    # Subscribed here, not in the endpoint: only a started generator is sure to be
    # closed (its finally) when the client goes away.
    subscription = _subscribe(d)
    if subscription.hub.listening:
        # A notification between the baseline and now came before this subscription.
        subscription.wake()
    try:
        last = baseline
        looked_at = quiet_since = time.monotonic()
        yield "retry: 3000\n\n"
        if stale:
            yield "event: change\ndata: {}\n\n"
        while not await request.is_disconnected():
            every = subscription.look_every(d.poll_seconds)
            due = looked_at + every
            woken = await subscription.wait(min(due, quiet_since + KEEPALIVE_SECONDS))
            now = time.monotonic()
            if woken or now >= due:
                # Gather the rest of a burst: one look per debounce interval at most.
                if now < looked_at + DEBOUNCE_SECONDS:
                    await asyncio.sleep(looked_at + DEBOUNCE_SECONDS - now)
                subscription.clear()
                current = await _look(d)
                looked_at = time.monotonic()
                if last is not None and current is not None and current != last:
                    yield "event: change\ndata: {}\n\n"
                    quiet_since = time.monotonic()
                if current is not None:
                    last = current
            if time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
                yield ": keepalive\n\n"
                quiet_since = time.monotonic()
    finally:
        subscription.close()


class Subscription:
    """One stream's wake-up: set by the hub's thread, awaited by the stream."""

    def __init__(self, d: Dashboard, hub: Hub) -> None:
        self._d = d
        self.hub = hub
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._closed = False

    def look_every(self, poll_seconds: float) -> float:
        """Seconds between two looks when nothing wakes the stream."""
        if self.hub.listening:
            return max(poll_seconds, SAFETY_SECONDS)
        return poll_seconds

    def wake(self) -> None:
        """Called from the hub's thread."""
        with contextlib.suppress(RuntimeError):  # the loop is closed
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, until: float) -> bool:
        """True when woken before ``until`` (monotonic seconds)."""
        timeout = until - time.monotonic()
        if self._event.is_set():
            return True
        if timeout <= 0:
            return False
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def clear(self) -> None:
        self._event.clear()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _unsubscribe(self._d, self)


class Poller:
    """The :class:`~jobdef.backends.protocol.Watcher` of a store whose engine tells no one
    of changes (SQLite): looks at the store every ``poll_seconds`` in a thread of its own
    and calls ``on_change()`` when the fingerprint moved, and when :attr:`listening`
    flips (the store became readable, or stopped being so), as an engine's listener
    does."""

    def __init__(self, d: Dashboard, on_change: Callable[[], None]) -> None:
        self._d = d
        self.on_change = on_change
        self.listening = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jobdef-poll", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end; returns at once (it ends within one poll)."""
        self._stop.set()

    def _run(self) -> None:
        last: tuple[Any, ...] | None = None
        while not self._stop.is_set():
            try:
                current: tuple[Any, ...] | None = views.fingerprint(self._d.store)
            except JobdefError:
                current = None
            readable = current is not None
            if readable != self.listening or (readable and last is not None and current != last):
                self.listening = readable
                if not self._stop.is_set():
                    self.on_change()
            last = current if readable else last
            self._stop.wait(self._d.poll_seconds)


class Hub:
    """What wakes the streams of one dashboard, shared by them: the engine's watcher of
    changes (PostgreSQL: one listening session), else one poller (SQLite)."""

    def __init__(self, d: Dashboard) -> None:
        self.subscribers: set[Subscription] = set()
        self._lock = threading.Lock()
        listener = listen_for_changes(d.store.url, self._wake_all)
        self.listener: Watcher = Poller(d, self._wake_all) if listener is None else listener

    @property
    def listening(self) -> bool:
        return self.listener.listening

    def _wake_all(self) -> None:
        with self._lock:
            subscribers = list(self.subscribers)
        for subscription in subscribers:
            subscription.wake()

    def add(self, subscription: Subscription) -> None:
        with self._lock:
            self.subscribers.add(subscription)

    def remove(self, subscription: Subscription) -> int:
        """Forget ``subscription``; how many are left."""
        with self._lock:
            self.subscribers.discard(subscription)
            return len(self.subscribers)


# Per dashboard: its open streams, and its hub while one is open.
_STREAMS: weakref.WeakKeyDictionary[Dashboard, set[Subscription]] = weakref.WeakKeyDictionary()
_HUBS: weakref.WeakKeyDictionary[Dashboard, Hub] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def _subscribe(d: Dashboard) -> Subscription:
    with _REGISTRY_LOCK:
        hub = _HUBS.get(d)
        if hub is None:
            hub = _HUBS[d] = Hub(d)
            hub.listener.start()
        subscription = Subscription(d, hub)
        _STREAMS.setdefault(d, set()).add(subscription)
        hub.add(subscription)
    return subscription


def _unsubscribe(d: Dashboard, subscription: Subscription) -> None:
    closing: Hub | None = None
    with _REGISTRY_LOCK:
        _STREAMS.get(d, set()).discard(subscription)
        hub = subscription.hub
        if hub.remove(subscription) == 0 and _HUBS.get(d) is hub:
            del _HUBS[d]
            closing = hub
    if closing is not None:
        # Not waited for (this runs on the event loop): the listening thread wakes on
        # a pipe and closes its session itself, at once unless it is connecting; the
        # poller ends within a poll.
        closing.listener.stop()


def open_streams(d: Dashboard) -> int:
    """How many event streams of ``d`` are open now (for tests and diagnostics)."""
    with _REGISTRY_LOCK:
        return len(_STREAMS.get(d, ()))


def hub_of(d: Dashboard) -> Hub | None:
    """The hub of ``d`` while a stream is open (for tests)."""
    with _REGISTRY_LOCK:
        return _HUBS.get(d)
