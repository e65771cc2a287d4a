"""The health probes of a real worker: /livez while its loop turns, /readyz while its store
answers and its handlers imported, unready when the database goes away; the health file."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from support import eventually

pytestmark = pytest.mark.slow


def probe(port: int, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_ready_while_the_sqlite_file_is_there_unready_once_it_is_moved(
    db_url: str, backend, workers, tmp_path: Path
) -> None:
    health_file = tmp_path / "alive"
    worker = workers.start("--health-port", "0", "--health-file", str(health_file))
    port = worker.port("--health-port")
    eventually(lambda: probe(port, "/readyz")[0] == 200, 30, "the worker to be ready")
    status, body = probe(port, "/livez")
    assert status == 200
    assert body["status"] == "ok"
    assert probe(port, "/readyz")[1] == {"status": "ok", "handlers_imported": True, "store": "ok"}
    touched = health_file.stat().st_mtime_ns
    eventually(lambda: health_file.stat().st_mtime_ns > touched, 10, "the file touched again")

    path = Path(db_url.removeprefix("sqlite:///"))
    path.rename(path.with_suffix(".away"))
    status, body = eventually(lambda: (r := probe(port, "/readyz"))[0] == 503 and r, 10)
    assert body == {
        "status": "not ready: store unreachable",
        "handlers_imported": True,
        "store": "unreachable",
    }
    assert str(path.parent) not in json.dumps(body)  # the log says where, not the probe
    assert "/readyz: the store does not answer: " in worker.log()
    assert probe(port, "/livez")[0] == 200  # alive all the same: the loop turns
    path.with_suffix(".away").rename(path)
    eventually(lambda: probe(port, "/readyz")[0] == 200, 10, "ready again")

    assert probe(port, "/elsewhere")[0] == 404
    assert worker.stop() == 0
    assert not health_file.exists()  # a stopped worker is not alive


class Proxy:
    """A loopback TCP proxy to PostgreSQL that a test can cut and restore."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._server: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self.restore()

    def restore(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(16)
        self.port = server.getsockname()[1]
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Refuse new connections and drop the open ones, as a server that went away."""
        assert self._server is not None
        self._server.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


@pytest.fixture
def proxy(postgres_url: str) -> Iterator[Proxy]:
    parts = urlsplit(postgres_url)
    running = Proxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    yield running
    with contextlib.suppress(OSError, AssertionError):
        running.cut()


@pytest.mark.postgres
def test_unready_when_postgresql_is_cut_off(
    postgres_url: str, postgres_schema: str, proxy: Proxy, workers_on
) -> None:
    parts = urlsplit(postgres_url)
    through = parts._replace(netloc=f"{parts.username or 'postgres'}@127.0.0.1:{proxy.port}")
    url = urlunsplit(through._replace(query=f"schema={postgres_schema}"))
    worker = workers_on(url).start("--health-port", "0")
    port = worker.port("--health-port")
    eventually(lambda: probe(port, "/readyz")[0] == 200, 30, "the worker to be ready")
    proxy.cut()
    # The worker's own writes may fail first ("cannot write"); the probe's soon after.
    unreachable = {"store": "unreachable", "status": "not ready: store unreachable"}
    eventually(lambda: unreachable.items() <= probe(port, "/readyz")[1].items(), 20)
    proxy.restore()
    eventually(lambda: probe(port, "/readyz")[0] == 200, 30, "ready again")
    assert worker.stop() == 0
