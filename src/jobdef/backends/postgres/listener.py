"""The listening session: it wakes idle workers on LISTEN/NOTIFY and holds the maintenance lock.

Each engine keeps one long-lived session besides the one its verbs use: it
listens on the schema's channel, which every enqueue notifies, and holds the
session-level advisory lock that elects the one engine that runs maintenance.
When it is lost, waiting falls back to plain polling and the lock is given up.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time

from jobdef.backends.postgres.session import Connection, connect, keep_inherited
from jobdef.errors import BackendError

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]


class Listener:
    """The session that listens for enqueues and holds the maintenance lock."""

    def __init__(
        self, conninfo: str, channel: str, *, maintenance_key: int, lock_sql: str, unlock_sql: str
    ) -> None:
        self.conninfo = conninfo
        self.channel = channel
        self._maintenance_key = maintenance_key
        self._lock_sql = lock_sql
        self._unlock_sql = unlock_sql
        self._session: Connection | None = None
        self._maintenance_held = False
        self._pid = os.getpid()
        self._session_lock = threading.RLock()
        self._wake_fds: tuple[int, int] | None = None
        self._wake_pid = 0

    def _forget_if_forked(self) -> None:
        if os.getpid() != self._pid:
            keep_inherited(self._session)
            self._session = None
            self._maintenance_held = False
            self._pid = os.getpid()

    def close(self) -> None:
        with self._session_lock:
            self._forget_if_forked()
            self._drop_session()
            if self._wake_fds is not None and self._wake_pid == os.getpid():
                for fd in self._wake_fds:
                    os.close(fd)
                self._wake_fds = None

    def try_maintenance_lock(self) -> bool:
        """Whether this engine is the one that reclaims, prunes and schedules.

        The first engine to ask takes a session-level advisory lock and keeps
        it until it closes or its session is lost; every other engine gets
        False. Call it before each maintenance round.
        """
        with self._session_lock:
            try:
                session = self._listening_session()
                if self._maintenance_held:
                    session.execute("SELECT 1")
                    return True
                key = self._maintenance_key
                row = session.execute(self._lock_sql, {"key": key}).fetchone()
                self._maintenance_held = bool(row[0])
                return self._maintenance_held
            except psycopg.Error:
                self._drop_session()
                return False
            except BackendError:
                return False

    def wait_for_jobs(self, timeout: float) -> bool:
        """Block until an enqueue notifies this schema's channel, :meth:`wake` is called,
        or ``timeout`` passes.

        True means "claim now" (a notification came, a wake-up, or the
        listening session was lost and the caller should poll); False means the
        timeout passed. Without a listening session (server down) this just
        waits, so callers fall back to polling.
        """
        with self._session_lock:
            wake_fd = self._wake_pipe()[0]
            try:
                session = self._listening_session()
            except BackendError:
                select.select([wake_fd], [], [], timeout)
                return self._drain_wakes()
            deadline = time.monotonic() + timeout
            try:
                # Notifications that came while the session ran another statement
                # (the maintenance lock) wait in psycopg's backlog: read them first.
                while not self._notified(session):
                    if session.broken:
                        raise psycopg.OperationalError("the listening session was lost")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    readable = [session.pgconn.socket, wake_fd]
                    ready, _, _ = select.select(readable, [], [], remaining)
                    if self._drain_wakes():
                        return True
                    if not ready:
                        return False
                return True
            except (psycopg.Error, OSError):
                self._drop_session()
                return True

    def wake(self) -> None:
        """End a :meth:`wait_for_jobs` at once (safe in a signal handler or another thread)."""
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_pipe()[1], b"!")

    def _wake_pipe(self) -> tuple[int, int]:
        if self._wake_fds is None or self._wake_pid != os.getpid():
            read_fd, write_fd = os.pipe()
            os.set_blocking(read_fd, False)
            os.set_blocking(write_fd, False)
            self._wake_fds, self._wake_pid = (read_fd, write_fd), os.getpid()
        return self._wake_fds

    def _drain_wakes(self) -> bool:
        woken = False
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_pipe()[0], 64):
                woken = True
        return woken

    @staticmethod
    def _notified(session: Connection) -> bool:
        return any(True for _ in session.notifies(timeout=0, stop_after=1))

    def _listening_session(self) -> Connection:
        """The long-lived session that listens for enqueues and holds the maintenance lock."""
        self._forget_if_forked()
        session = self._session
        if session is None or session.closed or session.broken:
            self._drop_session()
            session = connect(self.conninfo)
            session.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self._session = session
        return session

    def _drop_session(self) -> None:
        held, self._maintenance_held = self._maintenance_held, False
        session, self._session = self._session, None
        if session is not None and not session.closed:
            with contextlib.suppress(psycopg.Error):
                if held and not session.broken:
                    # Unlock now: the server frees a closed session's locks only
                    # when its process has exited, a moment later.
                    session.execute(self._unlock_sql, {"key": self._maintenance_key})
                session.close()
