"""The health probes of a real worker: /livez while its loop turns, /readyz while its store
answers and its handlers imported, unready when the database goes away; the health file."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from support import eventually
from support.proxy import CuttableProxy

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


def test_unready_when_postgresql_is_cut_off(
    postgres_url: str, postgres_schema: str, proxy: CuttableProxy, workers_on
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
