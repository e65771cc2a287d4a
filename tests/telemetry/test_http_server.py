"""The probes' and metrics' server on real sockets: a path that blocks takes at most half
its connections, so the quick paths answer meanwhile; what is not a GET of a short head
is refused in one answer."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from jobdef.telemetry.http_server import GuardedHTTPServer, Limits, Reply, Route, json_reply
from support import eventually


@pytest.fixture
def blocked() -> Iterator[threading.Event]:
    release = threading.Event()
    yield release
    release.set()


@pytest.fixture
def server(blocked: threading.Event) -> Iterator[GuardedHTTPServer]:
    def slow(_request: object) -> Reply:
        blocked.wait(30)
        return json_reply(200, {"status": "slow"})

    routes = {
        "/quick": Route(lambda _request: json_reply(200, {"status": "quick"})),
        "/slow": Route(slow, slow=True),
    }
    started = GuardedHTTPServer(routes, "test-server", Limits(connections=8))
    started.start("127.0.0.1", 0)
    yield started
    started.close()


def send(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(data)
    return sock


def answer(sock: socket.socket) -> bytes:
    found = b""
    while chunk := sock.recv(65536):
        found += chunk
    sock.close()
    return found


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


def test_a_path_that_blocks_leaves_the_quick_paths_their_slots(
    server: GuardedHTTPServer, blocked: threading.Event
) -> None:
    waiting = [send(server.port, get("/slow")) for _ in range(4)]  # half of the 8
    eventually(lambda: server.answering == 4, 10, "four slow answers under way")
    refused = answer(send(server.port, get("/slow")))
    assert refused.startswith(b"HTTP/1.1 503 ")
    assert refused.endswith(b'{"status": "busy, try again"}')
    for _ in range(20):  # the quick path answers all along
        assert answer(send(server.port, get("/quick"))).endswith(b'{"status": "quick"}')
    blocked.set()
    for sock in waiting:
        assert answer(sock).endswith(b'{"status": "slow"}')


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", b"405"),
        (b"GET /quick HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n", b"431"),
        (b"GET /quick HTTP/1.1\r\nX: " + b"a" * 9000, b"431"),  # not even ended
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", b"400"),  # a TLS hello
        (get("/elsewhere"), b"404"),
    ],
    ids=["post", "long-head", "long-unended-head", "tls-hello", "unknown-path"],
)
def test_what_is_not_a_short_get_is_one_answer(
    server: GuardedHTTPServer, request_bytes: bytes, status: bytes
) -> None:
    assert answer(send(server.port, request_bytes)).startswith(b"HTTP/1.1 " + status + b" ")


def test_head_has_no_body(server: GuardedHTTPServer) -> None:
    text = answer(send(server.port, b"HEAD /quick HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert text.startswith(b"HTTP/1.1 200 OK\r\n")
    assert text.endswith(b"\r\n\r\n")
    assert b"Content-Length: 19\r\n" in text
