"""Telling watchers (the dashboard) that the store changed: a batched ``NOTIFY`` on a
channel of its own, and the session that listens to it.

Why not a trigger: a trigger that notifies per row sends one notification per
claimed, finished or retried job, and every transaction that notifies takes
a lock on the server's one notification queue while it commits; under a
drain of thousands of jobs a second that lock serialises every worker's
commits. Why not the workers' channel (``jobdef_<schema>``), which enqueues
already notify: every idle worker listens there and would wake to claim at
each finished job.

So each engine sends the change notification itself, after the fact, and at
most once per :data:`INTERVAL` seconds however much it changed
(:class:`ChangeNotifier`): a worker draining a queue sends about four a
second, a CLI verb or a dashboard action sends one. The notification carries
no row: it only says "look again"; what changed is read from the tables. It
goes out on the engine's own session from a small thread, so no verb waits
for it, and it is never retried: a lost one costs a watcher a late refresh,
which its slow poll makes up for.

:class:`ChangeListener` is the watching side: one session that LISTENs on
both channels (enqueues come on the workers' channel, the rest on the changes
channel), calls back on each burst of notifications, and connects again when
its session is lost.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable

from jobdef.backends.postgres.session import QUICK_CONNECT_TIMEOUT, Connection, connect
from jobdef.errors import BackendError

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

log = logging.getLogger("jobdef.backends.postgres")

# Seconds between two change notifications from one engine, at most one per interval.
INTERVAL = 0.25
# Seconds between two tries to listen again after the listening session was lost.
RELISTEN_SECONDS = 1.0
# Seconds of silence after which the listening session checks that the server is there.
CHECK_SECONDS = 30.0


def workers_channel(schema: str) -> str:
    """The channel enqueues notify to wake idle workers."""
    return f"jobdef_{schema}"


def changes_channel(schema: str) -> str:
    """The channel of change notifications (a schema name has at most 48 characters, so
    this stays within PostgreSQL's 63)."""
    return f"jobdef_changes_{schema}"


class ChangeNotifier:
    """Sends ``send()`` at most once per ``interval`` seconds after :meth:`touched`.

    The first change after a quiet interval is sent at once; changes within
    the interval after a send are gathered into one more send at its end. The
    sends run in a daemon thread started at the first change (and again in a
    forked child), so :meth:`touched` costs a lock and a flag.
    """

    def __init__(self, send: Callable[[], None], interval: float = INTERVAL) -> None:
        self._send = send
        self.interval = interval
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._pending = False
        self._closing = False
        self._sent_at = -1e9
        self._thread: threading.Thread | None = None

    def touched(self) -> None:
        """Something a watcher shows changed: notify soon."""
        if self._pending and self._pid == os.getpid():
            # Already due to be sent: the thread clears the flag before it sends, so
            # that send comes after this change. No lock, no wake-up: a draining
            # worker comes here at every turn.
            return
        if self._pid != os.getpid():
            self._reset()
        with self._cond:
            if self._closing or self._pending:
                return
            self._pending = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="jobdef-changes", daemon=True
                )
                self._thread.start()
            else:
                self._cond.notify()

    def close(self) -> None:
        """Send what is pending now, and stop the thread."""
        if self._pid != os.getpid():
            self._reset()
            return
        with self._cond:
            self._closing = True
            thread = self._thread
            self._cond.notify()
        if thread is not None:
            thread.join(5)
        with self._cond:
            self._thread, self._closing = None, False

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                due = self._sent_at + self.interval
                while not self._closing and time.monotonic() < due:
                    self._cond.wait(due - time.monotonic())
                self._pending = False
                closing = self._closing
            try:
                self._send()
            except BackendError as exc:
                log.debug("change notification not sent: %s", exc)
            with self._cond:
                self._sent_at = time.monotonic()
            if closing:
                return


class ChangeListener:
    """One session that LISTENs for a schema's enqueues and changes, in a thread of its own.

    ``on_change()`` is called (in that thread) after each burst of notifications,
    and whenever :attr:`listening` flips, so a watcher looks at the store again
    when it may have missed something. While the session is lost it tries to
    listen again every :data:`RELISTEN_SECONDS`.
    """

    def __init__(
        self,
        conninfo: str,
        schema: str,
        on_change: Callable[[], None],
        *,
        relisten_seconds: float = RELISTEN_SECONDS,
    ) -> None:
        self.conninfo = conninfo
        self.channels = (workers_channel(schema), changes_channel(schema))
        self.on_change = on_change
        self.relisten_seconds = relisten_seconds
        self.listening = False
        # The server's process id of the listening session (tests end it on purpose).
        self.backend_pid: int | None = None
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        self._fds_lock = threading.Lock()
        self._fds_open = True
        self._thread = threading.Thread(target=self._run, name="jobdef-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to close its session and end; returns at once."""
        with self._fds_lock:
            if self._stop.is_set():
                return
            self._stop.set()
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"!")

    def close(self) -> None:
        """Stop listening and close the session (returns once it is closed)."""
        self.stop()
        if self._thread.is_alive():
            self._thread.join(10)
        if not self._thread.is_alive():
            self._close_fds()

    def _close_fds(self) -> None:
        with self._fds_lock:
            if self._fds_open:
                self._fds_open = False
                os.close(self._wake_r)
                os.close(self._wake_w)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._listen_once()
        finally:
            self._close_fds()

    def _listen_once(self) -> None:
        try:
            session = self._listen()
        except BackendError as exc:
            log.debug("cannot listen for changes: %s", exc)
            self._pause(self.relisten_seconds)
            return
        try:
            self._set_listening(True, session)
            self._serve(session)
        except (psycopg.Error, OSError) as exc:
            log.debug("lost the session listening for changes: %s", exc)
        finally:
            with contextlib.suppress(psycopg.Error):
                session.close()
            self._set_listening(False, None)
        self._pause(self.relisten_seconds)

    def _listen(self) -> Connection:
        session = connect(self.conninfo, connect_timeout=QUICK_CONNECT_TIMEOUT)
        try:
            for channel in self.channels:
                session.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        except psycopg.Error as exc:
            session.close()
            raise BackendError(f"cannot listen for changes: {exc}") from None
        return session

    def _set_listening(self, listening: bool, session: Connection | None) -> None:
        self.backend_pid = None if session is None else session.info.backend_pid
        self.listening = listening
        if not self._stop.is_set():
            self.on_change()

    def _serve(self, session: Connection) -> None:
        """Call back on each burst of notifications until stopped or the session is lost."""
        quiet_since = time.monotonic()
        while not self._stop.is_set():
            ready, _, _ = select.select([session.pgconn.socket, self._wake_r], [], [], 1.0)
            if self._stop.is_set():
                return
            if session.pgconn.socket in ready:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > CHECK_SECONDS:
                session.execute("SELECT 1")  # a dead peer shows itself here
                quiet_since = time.monotonic()
            else:
                continue
            # Every notification waiting (read now, or kept while SELECT 1 ran): one call.
            if sum(1 for _ in session.notifies(timeout=0)):
                self.on_change()
            if session.broken or session.closed:
                raise psycopg.OperationalError("the listening session was lost")

    def _pause(self, seconds: float) -> None:
        if not self._stop.is_set():
            select.select([self._wake_r], [], [], seconds)
