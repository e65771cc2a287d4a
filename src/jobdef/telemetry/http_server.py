"""The one HTTP server of a worker's probes and metrics, which no client can use to starve it.

A worker serves ``/livez`` and ``/readyz`` (:mod:`jobdef.telemetry.health`) and
``/metrics`` (:mod:`jobdef.telemetry.metrics`) from its own process, beside the
loop that claims jobs and spawns handler processes. Whatever arrives on those
ports must cost that process a bounded number of file descriptors and threads,
and nothing a client does (connect and say nothing, send a request head a byte
at a time, never read the answer) may hold a descriptor for long:

- one thread reads every connection (a selector, not a thread per connection)
  and answers the quick paths itself (``/livez``, a 404);
- at most :attr:`Limits.connections` connections are open at once; a new one
  beyond that closes the one that has waited longest without a whole request
  head, so a flood of idle connections cannot lock a prober out: the newest
  connection (the prober's, which sends its request at once) is kept;
- a connection has :attr:`Limits.read_timeout` seconds from its accept to send
  its whole request head (not per byte: a slow trickle is cut as surely as
  silence), and a head longer than :attr:`Limits.head_bytes` is refused;
- the paths that may block (a store probe, a scrape) are answered by a small
  fixed pool of threads, each answer written with :attr:`Limits.write_timeout`;
  they hold at most half the connections (more get a 503 at once), so a store
  that answers slowly, asked again and again, cannot take the slots of the
  quick paths;
- every answer closes its connection (no keep-alive to hold a slot).

So a server holds at most ``connections + 3`` descriptors (the listening
socket, the selector, the connections, one being accepted), whatever the
clients do; the rest of the worker's descriptors stay the worker's.
"""

from __future__ import annotations

import contextlib
import errno
import http
import json
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

DEFAULT_HOST = "127.0.0.1"
# accept() errors that say the process or system is out of something: stop accepting
# for a moment (the kernel's backlog holds the connections) rather than spin on them.
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_ACCEPT_PAUSE = 0.1
# The longest the reading thread sleeps, so close() is noticed without a wake-up pipe
# (two more descriptors).
_TICK = 0.2


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may take of the server."""

    # Connections open at once (reading a head, or being answered).
    connections: int = 16
    # Seconds from the accept to the end of the request head.
    read_timeout: float = 5.0
    # Seconds an answer may take to be written (a client that does not read).
    write_timeout: float = 5.0
    # The longest request head taken (request line and headers).
    head_bytes: int = 8192
    # Threads that answer the paths that may block.
    slow_threads: int = 2


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    # Header names in lower case.
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class Route:
    """What answers one path; ``slow``: it may block, so a thread of the pool answers."""

    answer: Callable[[Request], Reply]
    slow: bool = False


def json_reply(status: int, body: Mapping[str, Any]) -> Reply:
    return Reply(status, json.dumps(body).encode())


@dataclass(slots=True)
class _Connection:
    sock: socket.socket
    deadline: float
    head: bytearray = field(default_factory=bytearray)


class GuardedHTTPServer:
    """Serves ``routes`` (GET and HEAD) on one address, within :class:`Limits`."""

    def __init__(
        self,
        routes: Mapping[str, Route],
        name: str,
        limits: Limits | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.routes = dict(routes)
        self.name = name
        self.limits = limits or Limits()
        self._monotonic = monotonic
        self._listener: socket.socket | None = None
        self._selector: selectors.BaseSelector | None = None
        self._reading: dict[socket.socket, _Connection] = {}
        self._answering = 0
        # The connections handed to the pool, until their answer is written.
        self._handed: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._accept_paused_until: float | None = None

    @property
    def answering(self) -> int:
        """Connections handed to the pool, whose answer is not written yet."""
        with self._lock:
            return self._answering

    @property
    def port(self) -> int:
        assert self._listener is not None
        return int(self._listener.getsockname()[1])

    def start(self, host: str, port: int) -> int:
        """Listen on ``host``:``port`` (0: any free port) and serve in a daemon thread;
        the port. Raises OSError when the address cannot be had."""
        listener = _listening(host, port)
        selector = selectors.DefaultSelector()
        try:
            selector.register(listener, selectors.EVENT_READ)
        except BaseException:
            selector.close()
            listener.close()
            raise
        self._listener, self._selector = listener, selector
        self._pool = ThreadPoolExecutor(self.limits.slow_threads, thread_name_prefix=self.name)
        self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
        self._thread.start()
        return self.port

    def close(self) -> None:
        """Stop serving; every connection is closed."""
        self._closing.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        with self._lock:
            handed, self._handed = self._handed, set()
        for sock in handed:  # an answer still being made finds its socket closed
            _close(sock)
        for connection in list(self._reading.values()):
            _close(connection.sock)
        self._reading.clear()
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        if self._listener is not None:
            _close(self._listener)
            self._listener = None

    # -- the reading thread ----------------------------------------------------------

    def _serve(self) -> None:
        assert self._selector is not None
        while not self._closing.is_set():
            now = self._monotonic()
            wait = _TICK
            if self._reading:
                soonest = min(c.deadline for c in self._reading.values())
                wait = min(wait, max(soonest - now, 0.0))
            try:
                events = self._selector.select(wait)
            except OSError:  # closed under us
                return
            # Reads first: a request that arrived is answered before a burst of new
            # connections could push its connection out.
            listener_ready = False
            for key, _mask in events:
                if key.data is None:
                    listener_ready = True
                elif key.data.sock in self._reading:  # not dropped earlier in this turn
                    self._read(key.data)
            if listener_ready:
                self._accept()
            self._expire()
            self._resume_accepting()

    def _accept(self) -> None:
        assert self._listener is not None
        for _ in range(self.limits.connections):  # then the reads get their turn again
            try:
                sock, _peer = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in _EXHAUSTED:
                    self._pause_accepting()
                return
            sock.setblocking(False)
            with self._lock:
                answering = self._answering
            while self._reading and len(self._reading) + answering >= self.limits.connections:
                self._drop(next(iter(self._reading.values())))  # the oldest waiting
            if len(self._reading) + answering >= self.limits.connections:
                _close(sock)  # every slot is being answered: this one is refused
                continue
            deadline = self._monotonic() + self.limits.read_timeout
            connection = _Connection(sock, deadline)
            self._reading[sock] = connection
            assert self._selector is not None
            self._selector.register(sock, selectors.EVENT_READ, connection)

    def _pause_accepting(self) -> None:
        assert self._selector is not None
        assert self._listener is not None
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(self._listener)
        self._accept_paused_until = self._monotonic() + _ACCEPT_PAUSE

    def _resume_accepting(self) -> None:
        until = self._accept_paused_until
        if until is None or self._monotonic() < until:
            return
        assert self._selector is not None
        assert self._listener is not None
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._accept_paused_until = None

    def _read(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            self._drop(connection)
            return
        if not data:
            self._drop(connection)
            return
        connection.head += data
        end = _head_end(connection.head)
        if end is None:
            if len(connection.head) > self.limits.head_bytes:
                self._answer_now(connection, json_reply(431, {"status": "request head too long"}))
            return
        if end > self.limits.head_bytes:
            self._answer_now(connection, json_reply(431, {"status": "request head too long"}))
            return
        request = _parse(bytes(connection.head[:end]))
        if request is None:
            self._answer_now(connection, json_reply(400, {"status": "bad request"}))
            return
        if request.method not in ("GET", "HEAD"):
            self._answer_now(connection, json_reply(405, {"status": "only GET and HEAD"}))
            return
        route = self.routes.get(request.path)
        if route is None:
            body = {"status": "not found", "paths": sorted(self.routes)}
            self._answer_now(connection, json_reply(404, body), head_only=request.method == "HEAD")
            return
        if route.slow:
            with self._lock:
                busy = self._answering >= self.limits.connections // 2
            if busy:  # half the slots stay for the quick paths: /livez answers meanwhile
                self._answer_now(connection, json_reply(503, {"status": "busy, try again"}))
                return
            self._hand_over(connection, route, request)
            return
        self._answer_now(connection, _answered(route, request), head_only=request.method == "HEAD")

    def _expire(self) -> None:
        now = self._monotonic()
        late = [c for c in self._reading.values() if c.deadline <= now]
        for connection in late:
            self._answer_now(connection, json_reply(408, {"status": "request head too slow"}))

    def _forget(self, connection: _Connection) -> None:
        self._reading.pop(connection.sock, None)
        assert self._selector is not None
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(connection.sock)

    def _drop(self, connection: _Connection) -> None:
        self._forget(connection)
        _close(connection.sock)

    def _answer_now(
        self, connection: _Connection, reply: Reply, *, head_only: bool = False
    ) -> None:
        """Answer from the reading thread: a small reply fits the socket's buffer, so one
        non-blocking send writes it; a client that does not take it loses it."""
        self._forget(connection)
        with contextlib.suppress(OSError):
            connection.sock.send(_encoded(reply, head_only))
        _close(connection.sock)

    # -- the pool's threads --------------------------------------------------------------

    def _hand_over(self, connection: _Connection, route: Route, request: Request) -> None:
        self._forget(connection)
        with self._lock:
            self._answering += 1
            self._handed.add(connection.sock)
        assert self._pool is not None
        try:
            self._pool.submit(self._answer_slow, connection.sock, route, request)
        except RuntimeError:  # the pool was shut down: the server is closing
            self._answered_one(connection.sock)
            _close(connection.sock)

    def _answer_slow(self, sock: socket.socket, route: Route, request: Request) -> None:
        try:
            reply = _answered(route, request)
            sock.settimeout(self.limits.write_timeout)
            with contextlib.suppress(OSError):
                sock.sendall(_encoded(reply, request.method == "HEAD"))
        finally:
            _close(sock)
            self._answered_one(sock)

    def _answered_one(self, sock: socket.socket) -> None:
        with self._lock:
            self._answering -= 1
            self._handed.discard(sock)


def _answered(route: Route, request: Request) -> Reply:
    try:
        return route.answer(request)
    except Exception as exc:  # an answer that fails is a 500, never a dead server
        return json_reply(500, {"status": f"internal error ({type(exc).__name__})"})


def _listening(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening on ``host`` (a name or an address) and ``port``."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(64)  # beyond that the kernel refuses: no descriptor of ours is spent
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _head_end(head: bytearray) -> int | None:
    """Where the request head ends (the blank line), or None while it has not."""
    for mark in (b"\r\n\r\n", b"\n\n"):
        found = head.find(mark)
        if found >= 0:
            return found
    return None


def _parse(head: bytes) -> Request | None:
    lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[1].startswith("/"):
        return None
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            return None
        headers[name.strip().lower()] = value.strip()
    return Request(parts[0], parts[1].split("?")[0], headers)


def _encoded(reply: Reply, head_only: bool) -> bytes:
    phrase = http.HTTPStatus(reply.status).phrase
    head = (
        f"HTTP/1.1 {reply.status} {phrase}\r\n"
        f"Content-Type: {reply.content_type}\r\n"
        f"Content-Length: {len(reply.body)}\r\n"
        "Cache-Control: no-store\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + (b"" if head_only else reply.body)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
