"""Hostile callers on a real ``jobdef dashboard``'s port: hundreds of idle connections,
a request head sent a byte at a time (first, and after a response on a kept-alive
connection), while a live-update stream stays open; and the uvicorn protocol the
guard holds is made the way it expects."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from dashboard_process import dashboard_process
from dashboard_steps import SHEETS, Client

from jobdef.dashboard import serving
from jobdef.runtime.queue import connect
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.sockets import idle_connections, open_fds

pytestmark = pytest.mark.slow

LIMITS = serving.Limits()
IDLE = 300
# Descriptors the dashboard may open beyond those it holds once started: what the guard
# lets connections take (those open and those accepted at once) and some for the store,
# far fewer than the idle connections a test opens.
HEADROOM = LIMITS.connections + LIMITS.backlog + 32


def port_of(url: str) -> int:
    return int(urlsplit(url).port or 0)


def listening_pid(port: int) -> int:
    """The process whose socket listens on ``port`` of 127.0.0.1, from /proc."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        _address, _, hex_port = fields[1].partition(":")
        if fields[3] == "0A" and int(hex_port, 16) == port:
            inodes.add(f"socket:[{fields[9]}]")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{entry}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry}/fd/{fd}") in inodes:
                        return int(entry)
    raise AssertionError(f"no process listens on port {port}")


def trickle(sock: socket.socket, head: bytes, seconds: float) -> bytes:
    """Send ``head``, then a header byte every half second for up to ``seconds``: what
    the server answered before it closed the connection. Fails when it never does."""
    sock.sendall(head)
    answer = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            sock.sendall(b"X")
        except OSError:  # reset: the server closed it
            return answer
        sock.settimeout(0.5)
        try:
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            return answer
        if not data:
            return answer
        answer += data
    pytest.fail(f"the dashboard kept a trickling request open for {seconds} s")


class Stream:
    """One ``/events`` stream read in a thread: its lines, and whether it has ended."""

    def __init__(self, url: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port_of(url), timeout=120)
        self.conn.request("GET", "/events")
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        self.lines: list[bytes] = []
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for line in self.response:
                self.lines.append(line.strip())
        except (OSError, ValueError, http.client.HTTPException):
            pass
        self.ended.set()

    def changes(self) -> int:
        return self.lines.count(b"event: change")

    def close(self) -> None:
        if self.conn.sock is not None:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(10)
        self.conn.close()


def test_idle_connections_leave_the_dashboard_answering(sqlite_url: str, tmp_path: Path) -> None:
    with dashboard_process(sqlite_url, tmp_path) as url:
        port = port_of(url)
        pid = listening_pid(port)
        # Few descriptors to spare: what idle connections take, a request cannot use.
        limit = open_fds(pid) + HEADROOM
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
        with idle_connections(port, IDLE) as held:
            status, _, body = Client(url).request("/api/overview")
            assert status == 200, body
            assert open_fds(pid) < limit
            # The connections past the cap were closed, the longest waiting first.
            closed = 0
            for sock in held[: IDLE - LIMITS.connections]:
                sock.settimeout(10)
                with contextlib.suppress(ConnectionResetError):
                    closed += sock.recv(1) == b""
            assert closed == IDLE - LIMITS.connections
        status, _, _ = Client(url).request("/jobs")
        assert status == 200


@pytest.mark.parametrize("when", ["first", "after a response"])
def test_a_request_head_sent_a_byte_at_a_time_is_cut(
    sqlite_url: str, tmp_path: Path, when: str
) -> None:
    head = b"GET /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    with (
        dashboard_process(sqlite_url, tmp_path) as url,
        socket.create_connection(("127.0.0.1", port_of(url)), timeout=10) as slow,
    ):
        if when == "after a response":  # a kept-alive connection, reused
            slow.sendall(head + b"\r\n")
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += slow.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")
            length = int(answer.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(answer.split(b"\r\n\r\n", 1)[1]) < length:
                answer += slow.recv(65536)
        # Twelve times the deadline: a header byte every half second.
        answer = trickle(slow, head, LIMITS.head_timeout * 12)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        # It still answers everyone else.
        assert Client(url).request("/api/overview")[0] == 200


def test_a_live_stream_outlives_the_deadline_and_the_flood(sqlite_url: str, tmp_path: Path) -> None:
    with dashboard_process(sqlite_url, tmp_path) as url:
        stream = Stream(url)
        try:
            with idle_connections(port_of(url), 1) as (idle,):
                # Past the deadline the idle connection is closed, the stream is not.
                idle.settimeout(LIMITS.head_timeout * 6)
                assert idle.recv(1) == b""
            # Idle connections beyond the cap close waiting ones, never the stream.
            with idle_connections(port_of(url), IDLE):
                assert Client(url).request("/api/overview")[0] == 200
            assert not stream.ended.is_set()
            queue = connect(sqlite_url, load_registry([SHEETS]))
            try:
                queue.enqueue("ship_order", {"order_id": 1})
            finally:
                queue.close()
            eventually(lambda: stream.changes() >= 1, 60, "the stream to tell of the change")
            assert not stream.ended.is_set()
        finally:
            stream.close()


def test_a_request_body_sent_a_byte_at_a_time_is_cut(sqlite_url: str, tmp_path: Path) -> None:
    with dashboard_process(sqlite_url, tmp_path) as url:
        origin = f"127.0.0.1:{port_of(url)}"
        head = (
            f"POST /actions/jobs HTTP/1.1\r\nHost: {origin}\r\nOrigin: http://{origin}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", port_of(url)), timeout=10) as slow:
            # Six times the deadline: a byte of the form every half second.
            answer = trickle(slow, head, LIMITS.body_timeout * 6)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert Client(url).request("/api/overview")[0] == 200


def test_streams_beyond_their_cap_leave_the_pages_their_connections(
    sqlite_url: str, tmp_path: Path
) -> None:
    with dashboard_process(sqlite_url, tmp_path) as url:
        streams: list[Stream] = []
        try:
            # Every connection asks for a stream: only some get one.
            for _ in range(LIMITS.connections):
                with contextlib.suppress(OSError, http.client.HTTPException, AssertionError):
                    streams.append(Stream(url))
            eventually(
                lambda: sum(not s.ended.is_set() for s in streams) <= LIMITS.streams,
                30,
                "the streams beyond the cap to be closed",
            )
            open_streams = [s for s in streams if not s.ended.is_set()]
            assert len(open_streams) == LIMITS.streams
            # The rest of the connections still serve pages and the API.
            status, _, body = Client(url).request("/jobs")
            assert status == 200, body
            assert all(not s.ended.is_set() for s in open_streams)
        finally:
            for stream in streams:
                stream.close()


# -- the protocol uvicorn makes ------------------------------------------------------------


@contextlib.contextmanager
def guarded_server(app: Any, limits: serving.Limits) -> Iterator[int]:
    """uvicorn in a thread, serving ``app`` as ``jobdef dashboard`` does: its port."""
    import uvicorn

    config = uvicorn.Config(
        serving.RequestSignals(app),
        http=serving.protocol_class(limits),
        ws="none",
        lifespan="off",
        log_level="warning",
    )
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        eventually(lambda: server.started, 30, "the server to start")
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def test_uvicorn_makes_the_guarded_protocol_and_hands_each_request_its_connection() -> None:
    """Fails when uvicorn changes how it makes a ``Config(http=...)`` protocol or stops
    copying the lifespan state into each request's scope: the guard would then never
    learn that a request started, and would cut every request at its deadline."""
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["state"].get(serving.STATE_KEY))
        # Longer than the deadline: a request being served is never cut.
        await asyncio.sleep(1.5)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    with guarded_server(app, serving.Limits(connections=4, head_timeout=1.0)) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for _ in range(2):  # the second on the kept-alive connection
            conn.request("GET", "/")
            response = conn.getresponse()
            assert (response.status, response.read()) == (200, b"ok")
        conn.close()
        assert len(seen) == 2
        assert all(isinstance(c, serving.GuardedProtocol) for c in seen), (
            "uvicorn no longer hands the guard's state to each request: see "
            "jobdef.dashboard.serving"
        )
        assert seen[0] is seen[1]


def test_an_answer_the_client_never_reads_is_dropped() -> None:
    finished = threading.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(2000):  # 128 MiB, far more than the sockets' buffers hold
            await send({"type": "http.response.body", "body": b"x" * 65536, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        finished.set()

    with (
        guarded_server(app, serving.Limits(write_timeout=1.0)) as port,
        socket.create_connection(("127.0.0.1", port), timeout=10) as stuck,
    ):
        stuck.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        # Never read: the answer waits on the client until the connection is dropped.
        eventually(finished.is_set, 30, "the unread answer to be dropped")
