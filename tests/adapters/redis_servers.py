"""A Redis server of a test's own, started in its tmp folder and stopped after it: one
that asks for a password, or one that listens on a unix socket only.

Each runs ``redis-server`` from the PATH with no persistence, so it leaves nothing
behind but its folder. Absent ``redis-server``, the test skips (fails under CI=true).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from notify_servers import free_port


@dataclass(frozen=True)
class RedisServer:
    """A running server: how a client reaches it, as kwargs and as a URL."""

    kwargs: dict[str, Any]
    url: str

    def client(self) -> redis.Redis:
        return redis.Redis(**self.kwargs)

    def dump(self) -> bytes:
        """Every key and every value the server holds, as one blob to search."""
        client = self.client()
        parts: list[bytes] = []
        for key in client.scan_iter("*"):
            parts.append(key)
            kind = client.type(key)
            if kind == b"string":
                parts.append(client.get(key) or b"")
            elif kind == b"hash":
                for field, value in client.hgetall(key).items():
                    parts += [field, value]
            elif kind == b"list":
                parts += client.lrange(key, 0, -1)
            elif kind == b"set":
                parts += list(client.smembers(key))
            elif kind == b"zset":
                parts += [member for member, _ in client.zrange(key, 0, -1, withscores=True)]
            elif kind == b"stream":
                for _, fields in client.xrange(key):
                    for field, value in fields.items():
                        parts += [field, value]
        client.close()
        return b"\n".join(parts)


@contextlib.contextmanager
def redis_server(
    folder: Path, *, password: str | None = None, socket: bool = False
) -> Iterator[RedisServer]:
    """A ``redis-server`` in ``folder``: on a free loopback port (with ``password``
    asked of every client when given), or with ``socket`` on a unix socket only."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true requires redis-server on the PATH")
        pytest.skip("no redis-server on the PATH")
    folder.mkdir(parents=True, exist_ok=True)
    command = [binary, "--dir", str(folder), "--save", "", "--appendonly", "no"]
    if socket:
        path = folder / "redis.sock"
        command += ["--port", "0", "--unixsocket", str(path), "--unixsocketperm", "700"]
        kwargs: dict[str, Any] = {"unix_socket_path": str(path)}
        url = f"unix://{path}"
    else:
        port = free_port()
        command += ["--port", str(port), "--bind", "127.0.0.1"]
        kwargs = {"host": "127.0.0.1", "port": port}
        url = f"redis://127.0.0.1:{port}/0"
    if password is not None:
        command += ["--requirepass", password]
        kwargs["password"] = password
        url = url.replace("://", f"://:{password}@", 1)
    log = (folder / "redis.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    server = RedisServer(kwargs, url)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                server.client().ping()
                break
            except redis.ConnectionError:
                assert process.poll() is None, (folder / "redis.log").read_text()
                assert time.monotonic() < deadline, "redis-server did not answer in 20s"
                time.sleep(0.05)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()
