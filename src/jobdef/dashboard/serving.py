"""The dashboard's own port, bounded: what ``jobdef dashboard`` adds to uvicorn.

uvicorn times out a connection kept open after a response (``timeout_keep_alive``)
but not one that never sends a request, nor a request head sent a byte at a time,
and it takes any number of connections: a few hundred idle sockets hold as many of
the dashboard's descriptors for as long as their clients like. So each connection
is served by :class:`GuardedProtocol`, which holds uvicorn's HTTP/1.1 protocol and
passes it everything the transport says (asyncio's public protocol methods, nothing
of its insides), and :class:`RequestSignals`, an ASGI wrapper that tells the
connection when a request starts and when its response is complete. Between a
response and the next request head, and from the accept to the first, a connection
is *waiting*:

- a waiting connection has :attr:`Limits.head_timeout` seconds to send its whole
  request head (from its accept, or from the end of the previous response): not
  per byte, so a trickle is cut as surely as silence; a head begun is answered 408,
  an idle keep-alive connection is closed as uvicorn would close it;
- at most :attr:`Limits.connections` connections are open at once; a new one
  beyond that closes the one that has waited longest, so a flood of idle
  connections cannot lock the operator out (the newest connection, whose browser
  sends its request at once, is kept). Only when every connection is being served
  (requests under way, the live-update streams) is the new one refused;
- a request with a body must send all of it within :attr:`Limits.body_timeout`
  seconds of its head, or be answered before (408 otherwise): a body trickled a
  byte at a time holds a connection no longer than a head;
- at most :attr:`Limits.streams` connections hold a live-update stream (an
  answer of type ``text/event-stream``); one more is closed as its answer starts
  (the page's EventSource tries again a few seconds later), so the streams can
  take only part of the connections and the pages and actions keep the rest;
- otherwise a connection being served has no deadline (``/events`` streams live
  as long as the page), but one whose client stops reading altogether is
  aborted once its answer has waited :attr:`Limits.write_timeout` seconds.

A connection is known by the ``state`` of its requests' scope (the ASGI lifespan
state, which uvicorn copies into each scope), so the guard needs no address, which
a proxy's headers may rewrite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, cast

from uvicorn.protocols.http.h11_impl import H11Protocol

# The key of a connection's guard in the state uvicorn copies into each request's scope.
STATE_KEY = "jobdef.connection"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_TIMEOUT_ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 21\r\n"
    b"Connection: close\r\n\r\n"
    b"request head too slow"
)


@dataclass(frozen=True, slots=True)
class Limits:
    """What the clients of one dashboard may take of it."""

    # Connections open at once: being served, or waiting for a request head.
    connections: int = 64
    # Connections the kernel holds before they are accepted, and the most accepted at
    # once before the oldest waiting are closed: with ``connections``, a bound on the
    # descriptors that connections can take at any moment.
    backlog: int = 64
    # Seconds a waiting connection has to send a whole request head.
    head_timeout: float = 5.0
    # Seconds from a request's head to the end of its body, unless answered before.
    body_timeout: float = 10.0
    # Connections that hold a live-update stream at once.
    streams: int = 32
    # Seconds an answer may wait for a client that reads none of it.
    write_timeout: float = 30.0


class Connections:
    """The open connections of one server; the waiting ones in the order they began
    to wait (a dict keeps insertion order: the first is the longest waiting)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.open: set[GuardedProtocol] = set()
        self.waiting: dict[GuardedProtocol, None] = {}
        self.streams: set[GuardedProtocol] = set()

    def admit(self, newcomer: GuardedProtocol) -> bool:
        """Make room for ``newcomer``: close the longest waiting connections while the
        cap is reached; False when every open connection is being served."""
        while len(self.open) >= self.limits.connections and self.waiting:
            oldest = next(iter(self.waiting))
            oldest.close_waiting(evicted=True)
        if len(self.open) >= self.limits.connections:
            return False
        self.open.add(newcomer)
        return True

    def wait(self, connection: GuardedProtocol) -> None:
        self.waiting.pop(connection, None)
        self.waiting[connection] = None

    def serve(self, connection: GuardedProtocol) -> None:
        self.waiting.pop(connection, None)

    def stream(self, connection: GuardedProtocol) -> bool:
        """Count ``connection`` as a stream: False when the streams are at their cap."""
        if connection not in self.streams and len(self.streams) >= self.limits.streams:
            return False
        self.streams.add(connection)
        return True

    def forget(self, connection: GuardedProtocol) -> None:
        self.waiting.pop(connection, None)
        self.open.discard(connection)
        self.streams.discard(connection)


class GuardedProtocol(asyncio.Protocol):
    """uvicorn's HTTP/1.1 protocol for one connection, within :class:`Limits`.

    Made by :func:`protocol_class` (which gives it its server's :class:`Connections`)
    and called by uvicorn as it calls any ``Config(http=...)`` class."""

    connections: Connections

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._loop = _loop or asyncio.get_event_loop()
        # The state uvicorn copies into each request's scope names this connection.
        state = {**app_state, STATE_KEY: self}
        self.inner = H11Protocol(
            config=config, server_state=server_state, app_state=state, _loop=_loop
        )
        self.transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._body_deadline: asyncio.TimerHandle | None = None
        self._stalled: asyncio.TimerHandle | None = None
        # Bytes received since the connection began to wait: a head begun, or silence.
        self._heard = False
        # Counts the requests begun, so the end of an earlier one cannot re-arm the
        # deadline of a later one (a pipelined request starts as the previous ends).
        self._requests = 0
        self._closed = False
        self._made = False

    # -- asyncio's protocol methods, passed on -------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though not always an asyncio.Transport instance: uvloop's
        # (which uvicorn picks when it is installed) is its own class.
        self.transport = stream = cast(asyncio.Transport, transport)
        if not self.connections.admit(self):
            self._closed = True
            stream.abort()  # every slot is serving a request: this one is refused
            return
        self._made = True
        self.inner.connection_made(stream)
        self._start_waiting()

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        self._heard = True
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        self.inner.eof_received()  # uvicorn's returns None: the transport closes itself
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        self.connections.forget(self)
        if self._made:  # not refused at the accept
            self.inner.connection_lost(exc)
        self._closed = True

    def pause_writing(self) -> None:
        self.inner.pause_writing()
        if self._stalled is None:
            self._stalled = self._loop.call_later(
                self.connections.limits.write_timeout, self._abort
            )

    def resume_writing(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        self.inner.resume_writing()

    # -- what RequestSignals tells it -------------------------------------------------------

    def request_started(self, has_body: bool) -> int:
        """A request head arrived and its app runs: no head deadline while it is served,
        a body deadline if it has a body. Returns the request's number, for the calls
        below."""
        self._requests += 1
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.connections.serve(self)
        if has_body:
            timeout = self.connections.limits.body_timeout
            self._body_deadline = self._loop.call_later(timeout, self._cut_body)
        return self._requests

    def body_received(self, request: int) -> None:
        """The whole body of request number ``request`` arrived."""
        if request == self._requests:
            self._cancel_body_deadline()

    def response_started(self, request: int, stream: bool) -> bool:
        """The answer to request ``request`` starts; ``stream``: a live-update stream.
        False when it must not: the streams are at their cap, and the connection is
        closed."""
        if request == self._requests:
            self._cancel_body_deadline()
        if not stream or self.connections.stream(self):
            return True
        self._abort()
        return False

    def response_complete(self, request: int) -> None:
        """The answer to request number ``request`` is written: the connection waits
        for its next head (unless a later request has begun, or it is closing)."""
        if request != self._requests or self._closed or self._deadline is not None:
            return
        if self.transport is None or self.transport.is_closing():
            return
        self._start_waiting()

    # -- its own ----------------------------------------------------------------------------

    def _start_waiting(self) -> None:
        self._heard = False
        self.connections.wait(self)
        timeout = self.connections.limits.head_timeout
        self._deadline = self._loop.call_later(timeout, self.close_waiting)

    def close_waiting(self, *, evicted: bool = False) -> None:
        """Close a connection that has sent no whole head in time (or must make room
        for a new one); a head begun is answered 408 first."""
        self._deadline = None
        self.connections.forget(self)
        transport = self.transport
        if self._closed or transport is None or transport.is_closing():
            return
        self._closed = True
        if self._heard and not evicted:
            transport.write(_TIMEOUT_ANSWER)
        if transport.get_write_buffer_size():
            transport.abort()  # a client that does not read cannot hold the close
        else:
            transport.close()

    def _cut_body(self) -> None:
        """A request body not received in time, and no answer begun: 408, closed."""
        self._body_deadline = None
        self._heard = True
        self.close_waiting()

    def _cancel_body_deadline(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _abort(self) -> None:
        self._cancel_timers()
        self._closed = True
        self.connections.forget(self)
        if self.transport is not None:
            self.transport.abort()

    def _cancel_timers(self) -> None:
        for timer in (self._deadline, self._body_deadline, self._stalled):
            if timer is not None:
                timer.cancel()
        self._deadline = self._body_deadline = self._stalled = None


def protocol_class(limits: Limits) -> type[GuardedProtocol]:
    """The ``Config(http=...)`` class of one server, whose connections share ``limits``."""
    return type("GuardedProtocol", (GuardedProtocol,), {"connections": Connections(limits)})


class RequestSignals:
    """ASGI wrapper: tells a request's connection when the request starts and when
    its response is complete (an app served without :class:`GuardedProtocol` is
    passed through)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state")
        connection = state.get(STATE_KEY) if isinstance(state, dict) else None
        if scope["type"] != "http" or not isinstance(connection, GuardedProtocol):
            await self.app(scope, receive, send)
            return
        request = connection.request_started(_has_body(scope))
        refused = False

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                connection.body_received(request)
            return message

        async def sending(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start":
                refused = not connection.response_started(request, _is_stream(message))
            if refused:  # closed: the rest of the answer goes nowhere
                return
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                connection.response_complete(request)

        try:
            await self.app(scope, receiving, sending)
        finally:
            # An app that failed: uvicorn answers 500 (and completes) or closes.
            connection.response_complete(request)


def _has_body(scope: Scope) -> bool:
    """Whether the request announces a body (a length above 0, or chunks)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


def _is_stream(start: Message) -> bool:
    """Whether an answer's start says it is a live-update stream."""
    for name, value in start.get("headers", ()):
        if bytes(name).lower() == b"content-type":
            return bytes(value).lower().startswith(b"text/event-stream")
    return False
