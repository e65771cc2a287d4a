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
out a store outage is unready too. What ``/readyz`` answers is a few fixed
words (``not ready: store unreachable``), never the driver's message, which
names the store's user, host and database: the worker's log has that.

The server (:mod:`jobdef.telemetry.http_server`) listens on 127.0.0.1 unless
told otherwise, and holds a bounded number of connections and descriptors
whatever its clients do; a slow probe never holds up the loop. With
``--health-file`` the worker touches the file each turn instead (or as well),
for an exec probe: ``test $(( $(date +%s) - $(stat -c %Y FILE) )) -lt 60``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.protocol import fail_fast
from jobdef.redact import redact
from jobdef.telemetry.http_server import DEFAULT_HOST, GuardedHTTPServer, Reply, Route, json_reply

# A loop that has not turned for this long is not alive (it turns at least every
# poll interval, 250 ms by default, and every store call fails within seconds).
DEFAULT_STALE_AFTER = 60.0
DEFAULT_PROBE_EVERY = 1.0
log = logging.getLogger("jobdef.worker")


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
        self._server: GuardedHTTPServer | None = None

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
        """Whether the worker can take jobs, and why not in a few fixed words: what a
        probe answers names no user, host or database of the store (whoever can reach
        the port reads it); the worker's log says what the store's driver said."""
        reachable = self._probe_store() is None
        store = "ok" if reachable else "unreachable"
        if reachable and self.store_outage:
            store = "outage"
        live = self.live()[0]
        reasons = {
            "store unreachable": store == "unreachable",
            "the worker cannot write to its store": store == "outage",
            "the worker's loop is not turning": not live,
            "handlers not imported yet": not self.handlers_ready,
        }
        why = [reason for reason, holds in reasons.items() if holds]
        body: dict[str, Any] = {
            "status": "ok" if not why else "not ready: " + "; ".join(why),
            "handlers_imported": self.handlers_ready,
            "store": store,
        }
        return not why, body

    def _probe_store(self) -> str | None:
        """The store's answer (None: it answered), asked at most once per
        ``probe_every``; a new failure, and the recovery, are logged once."""
        with self._lock:
            now = self._monotonic()
            if self._probed_at is None or now - self._probed_at >= self.probe_every:
                before = self._store_error
                try:
                    self._check_store()
                    self._store_error = None
                except Exception as exc:  # any failure means "not reachable"
                    self._store_error = _one_line(exc)
                self._probed_at = self._monotonic()
                if self._store_error != before:
                    if self._store_error is not None:
                        log.warning("/readyz: the store does not answer: %s", self._store_error)
                    elif before is not None:
                        log.info("/readyz: the store answers again")
            return self._store_error

    # -- the server --------------------------------------------------------------------

    def serve(self, port: int, address: str = DEFAULT_HOST) -> int:
        """Serve the probes on ``address``:``port`` (0: any free port) in a daemon thread;
        the port. ``/livez`` is answered by the server's reading thread, ``/readyz`` (which
        may wait for the store) by its pool (:mod:`jobdef.telemetry.http_server`)."""
        routes = {
            "/livez": Route(lambda _request: _probe_reply(*self.live())),
            "/readyz": Route(lambda _request: _probe_reply(*self.ready()), slow=True),
        }
        server = GuardedHTTPServer(routes, "jobdef-health")
        bound = server.start(address, port)
        self._server = server
        return bound

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


def _probe_reply(ok: bool, body: dict[str, Any]) -> Reply:
    return json_reply(200 if ok else 503, body)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return redact(f"{type(exc).__name__}: {text[0] if text else ''}"[:300])


def store_probe(url: str) -> Callable[[], None]:
    """A check that the store at ``url`` answers, on a connection of its own: opened,
    asked its schema version, closed. Raises when it cannot."""

    def check() -> None:
        backend = open_backend(url, create=False, migrate=False)
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
