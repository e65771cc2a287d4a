"""Hostile callers on a real worker's health and metrics ports: hundreds of idle
connections, a request head sent a byte at a time, the address it listens on, and
what /readyz tells a stranger while the store is down."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from test_health import probe

from jobdef.backends.protocol import Backend
from jobdef.runtime.queue import Queue
from support import eventually
from support.proxy import CuttableProxy
from support.sockets import idle_connections, open_fds

pytestmark = pytest.mark.slow

# Descriptors the worker may open beyond those it holds once started: enough to respawn
# its handler process, far fewer than the idle connections a test opens.
HEADROOM = 64
IDLE = 300


def listening_address(pid: int, port: int) -> str:
    """The local address of the socket of ``pid`` listening on ``port``, from /proc."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port and inode in inodes:
                if table == "tcp":
                    return socket.inet_ntoa(bytes.fromhex(address)[::-1])
                return "::" if set(address) == {"0"} else address
    raise AssertionError(f"no socket of {pid} listens on port {port}")


def test_idle_connections_leave_livez_answering_and_jobs_running(
    queue: Queue, backend: Backend, workers
) -> None:
    worker = workers.start("--health-port", "0", "--metrics-port", "0", "--lease", "2s")
    health, metrics = worker.port("--health-port"), worker.port("--metrics-port")
    eventually(lambda: probe(health, "/readyz")[0] == 200, 30, "the worker to be ready")
    # Few descriptors to spare: what the connections take, the worker cannot spawn with.
    limit = open_fds(worker.pid) + HEADROOM
    resource.prlimit(worker.pid, resource.RLIMIT_NOFILE, (limit, limit))

    with idle_connections(health, IDLE), idle_connections(metrics, IDLE):
        assert probe(health, "/livez")[0] == 200
        assert open_fds(worker.pid) < limit
        # Each crash and timeout kills the handler process, and a new one is spawned.
        ids = [queue.enqueue(job, {"i": n}).id for n in range(3) for job in ("crash", "slow")]
        ids += [queue.enqueue("quick", {"i": n}).id for n in range(3)]

        def states() -> list[str]:
            return [backend.get(i).state for i in ids]  # type: ignore[union-attr]

        eventually(lambda: set(states()) <= {"dead", "done"}, 60, "every job to end")
        assert states() == ["dead"] * 6 + ["done"] * 3
        assert worker.process.poll() is None, worker.log()
        assert probe(health, "/livez")[0] == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=10) as scrape:
            assert b"jobdef_jobs_finished_total" in scrape.read()
    assert worker.stop() == 0


@pytest.mark.parametrize("option", ["--health-port", "--metrics-port"])
def test_a_request_head_sent_a_byte_at_a_time_is_cut(workers, option: str) -> None:
    worker = workers.start(option, "0")
    port = worker.port(option)
    worker.wait_up()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
        slow.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n")
        answer = b""
        # Far longer than the server's read timeout: a header byte every half second.
        for _ in range(120):
            try:
                slow.sendall(b"X")
            except OSError:  # reset: the server closed it
                break
            with contextlib.suppress(TimeoutError):
                slow.settimeout(0.5)
                data = slow.recv(4096)
                if not data:
                    break
                answer += data
            if answer.endswith(b"}"):
                break
        else:
            pytest.fail("the server kept a trickling request head open for a minute")
    if answer:
        assert answer.startswith(b"HTTP/1.1 408 ")
    assert worker.stop() == 0


def test_the_servers_listen_on_loopback_unless_told(workers) -> None:
    default = workers.start("--health-port", "0", "--metrics-port", "0", name="default")
    for option in ("--health-port", "--metrics-port"):
        assert listening_address(default.pid, default.port(option)) == "127.0.0.1"
    assert "--health-port: listening on 127.0.0.1 port " in default.log()
    default.wait_up()
    assert default.stop() == 0

    told = workers.start(
        "--health-port", "0", "--health-host", "0.0.0.0", "--metrics-port", "0", name="told"
    )
    assert listening_address(told.pid, told.port("--health-port")) == "0.0.0.0"
    assert listening_address(told.pid, told.port("--metrics-port")) == "127.0.0.1"
    told.wait_up()
    assert told.stop() == 0


def test_a_host_that_is_not_this_one_is_one_line(workers) -> None:
    worker = workers.start("--burst", "--health-port", "0", "--health-host", "192.0.2.1")
    assert worker.process.wait(60) == 2
    assert worker.log().splitlines()[-1] == (
        "jobdef worker: error: --health-host 192.0.2.1: cannot listen there (Cannot assign "
        "requested address); give an address of this host (127.0.0.1 by default, 0.0.0.0 "
        "for every interface)"
    )


def test_readyz_names_no_user_host_or_database_while_the_store_is_down(
    postgres_url: str, postgres_schema: str, proxy: CuttableProxy, workers_on
) -> None:
    parts = urlsplit(postgres_url)
    user = parts.username or "postgres"
    through = parts._replace(netloc=f"{user}@127.0.0.1:{proxy.port}")
    url = urlunsplit(through._replace(query=f"schema={postgres_schema}"))
    worker = workers_on(url).start("--health-port", "0")
    port = worker.port("--health-port")
    eventually(lambda: probe(port, "/readyz")[0] == 200, 30, "the worker to be ready")
    proxy.cut()
    wanted = {"status": "not ready: store unreachable", "store": "unreachable"}
    _status, body = eventually(
        lambda: wanted.items() <= (r := probe(port, "/readyz"))[1].items() and r, 20
    )
    text = json.dumps(body)
    database = parts.path.lstrip("/")
    for secret in (user, "127.0.0.1", str(proxy.port), database, postgres_schema):
        assert secret not in text
    # The worker's own log says what the driver said.
    eventually(lambda: "/readyz: the store does not answer: " in worker.log(), 10)
    assert worker.stop() == 0
