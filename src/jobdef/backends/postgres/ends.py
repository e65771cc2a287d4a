"""The waiters' session: it hears which watched jobs ended, on a channel of their own.

A waiter (:mod:`jobdef.backends.waiters`) marks its job ``watched`` in the
statement that reads the job's state (``watch_jobs``), and every statement
that ends a job (``complete_jobs``, ``complete_and_claim``, ``bury_job``,
``cancel_job``) notifies the channel :func:`ended_channel` for the jobs it
ended that are watched, the job's id as the payload: one notification per job
that somebody waits for, none for the others, so a worker draining jobs that
nobody waits for sends nothing more than before. Not the workers' channel,
which every idle worker listens to, nor the dashboard's changes channel, which
carries no row.

:class:`EndListener` is the listening side, one session for every waiter of a
process: it LISTENs before any job is marked (the thread asks :meth:`listen`
first in each round), so an end is either told to it or already visible when
the job is read. When its session is lost, notifications sent meanwhile are
lost with it: the next :meth:`listen` opens a new one and says so, and the
thread reads every waited job again. While no session can be opened, the
thread polls every :data:`UNHEARD_POLL` seconds; with one, every
:data:`FALLBACK_POLL` seconds, in case a notification went astray anyway.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time

from jobdef.backends.postgres.session import QUICK_CONNECT_TIMEOUT, Connection, connect
from jobdef.errors import BackendError

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

log = logging.getLogger("jobdef.waiters")

# Seconds between two reads of every waited job while the session listens.
FALLBACK_POLL = 5.0
# The same while no session listens (the server is out of reach, or was).
UNHEARD_POLL = 1.0
# Seconds between two tries to listen again after the session was lost.
RELISTEN_SECONDS = 1.0
# Seconds of silence after which the session checks that the server is there.
CHECK_SECONDS = 30.0


def ended_channel(schema: str) -> str:
    """The channel the statements that end a watched job notify (a schema name has at
    most 48 characters, so this stays within PostgreSQL's 63)."""
    return f"jobdef_ended_{schema}"


class EndListener:
    """The :class:`~jobdef.backends.protocol.EndSignal` of a PostgreSQL store: one
    session LISTENing on the schema's :func:`ended_channel`."""

    def __init__(self, conninfo: str, schema: str, *, pooled: bool = False) -> None:
        self.conninfo = conninfo
        self.channel = ended_channel(schema)
        # Behind a transaction pooler (?wake=poll) LISTEN hears nothing: only poll.
        self.pooled = pooled
        self._session: Connection | None = None
        self._next_try = 0.0
        self._checked = time.monotonic()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        # wake() comes from other threads: never on a pipe close() closed (its number
        # may name another file by then).
        self._fds_lock = threading.Lock()
        self._fds_open = True

    @property
    def poll_seconds(self) -> float:
        return FALLBACK_POLL if self._session is not None else UNHEARD_POLL

    @property
    def backend_pid(self) -> int | None:
        """The server's process id of the listening session (tests end it on purpose)."""
        session = self._session
        return None if session is None else int(session.info.backend_pid)

    def listen(self) -> bool:
        if self.pooled:
            return False
        session = self._session
        if session is not None and not (session.closed or session.broken):
            if time.monotonic() - self._checked < CHECK_SECONDS:
                return False
            try:
                session.execute("SELECT 1")  # a dead peer shows itself here
                self._checked = time.monotonic()
                return False
            except psycopg.Error:
                self._drop()
        if time.monotonic() < self._next_try:
            return False
        try:
            session = connect(self.conninfo, connect_timeout=QUICK_CONNECT_TIMEOUT)
        except BackendError as exc:
            log.debug("waiters cannot listen for ends: %s", exc)
            self._next_try = time.monotonic() + RELISTEN_SECONDS
            return False
        try:
            session.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        except psycopg.Error as exc:
            log.debug("waiters cannot listen for ends: %s", exc)
            with contextlib.suppress(psycopg.Error):
                session.close()
            self._next_try = time.monotonic() + RELISTEN_SECONDS
            return False
        self._session, self._checked = session, time.monotonic()
        return True

    def heard(self, timeout: float) -> set[int]:
        session = self._session
        try:
            # Notifications that came while the session ran a statement (the check)
            # wait in psycopg's backlog, not on the socket: read them first.
            told = self._told(session)
            if not told:
                fds = [self._wake_r] + ([session.pgconn.socket] if session is not None else [])
                select.select(fds, [], [], timeout)
                told = self._told(session)
        except (OSError, ValueError) as exc:  # the socket closed under select
            log.debug("the waiters' session was lost: %s", exc)
            self._drop()
            told = set()
        except Exception as exc:
            if psycopg is None or not isinstance(exc, psycopg.Error):
                raise
            log.debug("the waiters' session was lost: %s", exc)
            self._drop()
            told = set()
        self._drain_wakes()
        return told

    def _told(self, session: Connection | None) -> set[int]:
        if session is None:
            return set()
        told = {int(note.payload) for note in session.notifies(timeout=0)}
        if session.broken or session.closed:
            raise psycopg.OperationalError("the waiters' session was lost")
        return told

    def wake(self) -> None:
        with self._fds_lock, contextlib.suppress(BlockingIOError, OSError):
            if self._fds_open:
                os.write(self._wake_w, b"!")

    def _drain_wakes(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._wake_r, 512):
                pass

    def _drop(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            with contextlib.suppress(psycopg.Error):
                session.close()

    def close(self) -> None:
        self._drop()
        with self._fds_lock:
            if self._fds_open:
                self._fds_open = False
                os.close(self._wake_r)
                os.close(self._wake_w)
