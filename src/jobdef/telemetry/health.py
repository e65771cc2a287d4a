"""The worker's health for a supervisor: ``/livez`` and ``/readyz`` over HTTP, or a file.

Liveness is the loop turning: the worker notes every turn (:meth:`Health.turned`),
and ``/livez`` answers 200 while the last turn is at most ``stale_after`` seconds
old (a turn lasts at most the poll interval or a store call; a frozen or
deadlocked loop stops turning, and the supervisor restarts the process).

Readiness is "this worker can take jobs": its handlers imported (the pool's
processes said so) and its store answers. The store is asked afresh by the
probe, on a connection of its own opened for the probe (a SQLite file moved
away or a PostgreSQL server cut off makes it fail at once, where the worker's
open connection might not notice until its next write), at most once per
``probe_every`` seconds however often the probe is called; a worker riding
out a store outage is unready too.

The server is a :class:`http.server.ThreadingHTTPServer` in a daemon thread of
the worker: no dependency, and a slow probe never holds up the loop. With
``--health-file`` the worker touches the file each turn instead (or as well),
for an exec probe: ``test $(( $(date +%s) - $(stat -c %Y FILE) )) -lt 60``.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from jobdef.backends import engine_class
from jobdef.backends.protocol import fail_fast
from jobdef.backends.schema import Versioned
from jobdef.redact import redact

# A loop that has not turned for this long is not alive (it turns at least every
# poll interval, 250 ms by default, and every store call fails within seconds).
DEFAULT_STALE_AFTER = 60.0
DEFAULT_PROBE_EVERY = 1.0


class Health:
    """What the probes answer, updated by the worker's loop, read by the server's threads."""

    def __init__(
        self,
        check_store: Callable[[], None],
        *,
        stale_after: float = DEFAULT_STALE_AFTER,
        probe_every: float = DEFAULT_PROBE_EVERY,
        health_file: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._check_store = check_store
        self.stale_after = stale_after
        self.probe_every = probe_every
        self.health_file = Path(health_file) if health_file else None
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last_turn: float | None = None
        self.handlers_ready = False
        self.store_outage = False
        self._probed_at: float | None = None
        self._store_error: str | None = None
        self._server: ThreadingHTTPServer | None = None

    # -- the worker's side ---------------------------------------------------------

    def turned(self, *, handlers_ready: bool, store_outage: bool) -> None:
        """One turn of the loop; touches the health file if there is one."""
        self._last_turn = self._monotonic()
        self.handlers_ready = handlers_ready
        self.store_outage = store_outage
        if self.health_file is not None:
            with contextlib.suppress(OSError):
                self.health_file.touch()

    def stopped(self) -> None:
        """The loop ended: not alive any more; the health file is removed."""
        self._last_turn = None
        if self.health_file is not None:
            with contextlib.suppress(OSError):
                self.health_file.unlink()

    # -- the probes ------------------------------------------------------------------

    def live(self) -> tuple[bool, dict[str, Any]]:
        last = self._last_turn
        age = None if last is None else self._monotonic() - last
        ok = age is not None and age <= self.stale_after
        return ok, {"status": "ok" if ok else "stale", "last_turn_age_seconds": age}

    def ready(self) -> tuple[bool, dict[str, Any]]:
        store_error = self._probe_store()
        if self.store_outage and store_error is None:
            store_error = "the worker cannot write to its store (an outage it is riding out)"
        ok = self.handlers_ready and store_error is None and self.live()[0]
        body: dict[str, Any] = {
            "status": "ok" if ok else "unready",
            "handlers_imported": self.handlers_ready,
            "store": "ok" if store_error is None else store_error,
        }
        return ok, body

    def _probe_store(self) -> str | None:
        """The store's answer, asked at most once per ``probe_every``."""
        with self._lock:
            now = self._monotonic()
            if self._probed_at is None or now - self._probed_at >= self.probe_every:
                try:
                    self._check_store()
                    self._store_error = None
                except Exception as exc:  # any failure means "not reachable"
                    self._store_error = _one_line(exc)
                self._probed_at = self._monotonic()
            return self._store_error

    # -- the server --------------------------------------------------------------------

    def serve(self, port: int, address: str = "0.0.0.0") -> int:
        """Serve the probes on ``port`` (0: any free one) in a daemon thread; the port."""
        health = self

        class Probe(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] == "/livez":
                    ok, body = health.live()
                elif self.path.split("?")[0] == "/readyz":
                    ok, body = health.ready()
                else:
                    self._answer(404, {"status": "not found", "paths": ["/livez", "/readyz"]})
                    return
                self._answer(200 if ok else 503, body)

            def _answer(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a probe every few seconds is not worth a log line

        server = ThreadingHTTPServer((address, port), Probe)
        server.daemon_threads = True
        self._server = server
        thread = threading.Thread(target=server.serve_forever, name="jobdef-health", daemon=True)
        thread.start()
        return int(server.server_address[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return redact(f"{type(exc).__name__}: {text[0] if text else ''}"[:300])


def store_probe(url: str) -> Callable[[], None]:
    """A check that the store at ``url`` answers, on a connection of its own: opened,
    asked its schema version, closed. Raises when it cannot."""

    def check() -> None:
        backend: Versioned = engine_class(url)(url, create=False)
        try:
            fail_fast(backend)
            backend.schema_version()
        finally:
            backend.close()

    return check


def file_is_fresh(path: str, max_age: float) -> bool:
    """Whether ``path`` was touched within ``max_age`` seconds (an exec probe's test)."""
    try:
        return time.time() - os.stat(path).st_mtime <= max_age
    except OSError:
        return False
