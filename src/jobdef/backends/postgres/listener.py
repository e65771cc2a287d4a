"""The listening session: it wakes idle workers on LISTEN/NOTIFY and keeps the maintenance lease.

Each engine keeps one long-lived session besides the one its verbs use: it
listens on its own channel (:attr:`Listener.own_channel`, which a worker writes
in its row of the workers table), where an enqueue tells the idle workers whose
turn its jobs are, and on the schema's channel, where an enqueue tells every
worker when it cannot address them all, and a release or requeue does (``queue
count first_id ...``, read as a :class:`~jobdef.backends.records.Wakeup`,
:mod:`jobdef.runtime.wake_share`), and renews the maintenance
lease that elects the one engine that runs maintenance. When the session is
lost, waiting falls back to plain polling. With ``?wake=poll`` (behind a
transaction pooler, where a session is not kept) there is no such session: a
wait only sleeps, and the lease is renewed on the verbs' session.

The lease is a row (``jobdef_leases``), not a session-level advisory lock: a
frozen worker (SIGSTOP, a deadlock) keeps its session, and would keep such a
lock, and maintenance would stop for every host. A row's lease lapses when its
holder stops renewing it, whatever its session does; the next engine to ask
then takes it over with the next generation, and the old holder, should it come
back, finds a generation not its own and is no longer the maintainer. The
holder renews it at every call of :meth:`Listener.try_maintenance_lock` (the
worker asks before each maintenance round, about every second), so a frozen
holder is replaced at most ``lease_seconds`` plus one round after its last
renewal. Two maintainers for a moment (a holder that resumes mid-round) do no
harm: every maintenance verb is fenced or idempotent.

An engine refused the lease does not ask again before the lease it was refused
can lapse (the answer says when, by the server's clock): asking every round, each
idle worker of a fleet ran a statement a second that changed nothing. A holder
that stops gives its lease back and says so on the schema's channel
(:data:`LEASE_FREED`): the others, hearing it, ask at their next round. Behind a
transaction pooler nothing hears it, so there each engine asks every round, as
the holder does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import threading
import time
import uuid

from jobdef.backends.postgres.session import (
    CONNECT_TIMEOUT,
    Connection,
    SessionManager,
    connect,
    keep_inherited,
)
from jobdef.backends.records import Wakeup
from jobdef.errors import BackendError
from jobdef.wake_pipe import WakePipe

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

log = logging.getLogger("jobdef.worker")

LEASE_NAME = "maintenance"

# The notification a holder that gives its lease back sends on the schema's channel:
# no queue's name (they match ^[a-z][a-z0-9_-]*$), so no enqueue's wake-up either.
LEASE_FREED = "jobdef:lease-freed"

# The most wake-ups kept from the listening session between two waits for jobs: a
# busy worker reads them at each maintenance round (its lease asked for or renewed,
# or looked for), and waits for jobs only once idle. Past that, one that looks at
# every queue.
UNREAD_MOST = 256


def holder_id() -> str:
    """host:pid:random: who holds the lease, unique across hosts and restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def own_channel() -> str:
    """A channel no other process listens on: random, so unique across hosts and
    schemas (a channel name is the database's, not a schema's), and short of the
    63 bytes a channel's name may have."""
    return f"jobdef_wake_{uuid.uuid4().hex}"


class Listener:
    """The session that listens for enqueues and keeps the maintenance lease."""

    def __init__(
        self,
        conninfo: str,
        channel: str,
        *,
        lease_seconds: float,
        take_sql: str,
        give_back_sql: str,
        pooled: SessionManager | None = None,
    ) -> None:
        self.conninfo = conninfo
        # Behind a transaction pooler (?wake=poll): no session of its own, no LISTEN;
        # the lease is renewed on the verbs' session, and a wait only sleeps.
        self.pooled = pooled
        self.channel = channel
        self.lease_seconds = lease_seconds
        self._take_sql = take_sql
        self._give_back_sql = give_back_sql
        self._session: Connection | None = None
        # Seconds a connection attempt may take (the engine's fail_fast shortens it).
        self.connect_timeout = CONNECT_TIMEOUT
        self.holder = holder_id()
        self.own_channel = own_channel()
        # The lease generation this engine holds (None: it does not maintain).
        self.generation: int | None = None
        # Refused the lease, this engine asks again no sooner (time.monotonic()): when
        # the lease it was refused lapses, or once it hears LEASE_FREED.
        self._ask_after = 0.0
        # Wake-ups heard while looking for LEASE_FREED, for the next wait_for_jobs.
        self._unread: list[Wakeup] = []
        self._pid = os.getpid()
        self._session_lock = threading.RLock()
        self._wakes = WakePipe()

    def _forget_if_forked(self) -> None:
        if os.getpid() != self._pid:
            keep_inherited(self._session)
            self._session = None
            self._unread, self._ask_after = [], 0.0
            self.holder, self.generation = holder_id(), None
            self.own_channel = own_channel()
            self._pid = os.getpid()

    def close(self) -> None:
        with self._session_lock:
            self._forget_if_forked()
            self._give_back()
            self._drop_session()
            self._wakes.close()

    def try_maintenance_lock(self) -> bool:
        """Whether this engine is the one that reclaims, prunes, schedules and sends.

        Renews the maintenance lease this engine holds, or takes it when it is
        free or has lapsed; False while another engine holds it, or when the
        server cannot be reached. Call it before each maintenance round, more
        often than ``lease_seconds``. Refused, the engine asks the server again
        only once that lease can have lapsed, or been given back.
        """
        with self._session_lock:
            held = self.generation
            if held is None and not self._may_ask():
                return False
            params = self._lease_params(held)
            try:
                if self.pooled is not None:
                    take = self._take_sql
                    row = self.pooled.run(lambda conn: conn.execute(take, params).fetchone())
                else:
                    row = self._listening_session().execute(self._take_sql, params).fetchone()
            except (psycopg.Error, BackendError) as exc:
                if isinstance(exc, psycopg.Error):
                    self._drop_session()
                # Not maintaining while the server is out of reach; the generation is
                # kept, so the lease is renewed when it comes back if it has not lapsed.
                return False
            assert row is not None  # take_lease answers one row, taken or not
            self.generation = None if row[0] is None else int(row[0])
            if self.generation is None and self.pooled is None:
                lapses_in = self.lease_seconds if row[2] is None else row[2]
                self._ask_after = time.monotonic() + max(0.0, min(lapses_in, self.lease_seconds))
            if self.pooled is None and self._session is not None:
                # What came while it ran went to psycopg's backlog, which keeps all; a
                # lease given back since the answer is heard now, after it.
                self._take_in(self._session)
            if self.generation is not None and self.generation != held:
                log.info(
                    "this worker maintains now (reclaim, pruning, results, scheduler, outbox): "
                    "took the maintenance lease, generation %d, from %s",
                    self.generation,
                    row[1] or "nobody",
                )
            elif held is not None and self.generation is None:
                log.warning(
                    "this worker no longer maintains: could not renew the maintenance "
                    "lease (generation %d)",
                    held,
                )
            return self.generation is not None

    def _may_ask(self) -> bool:
        """Whether this engine, which holds no lease, asks for it now: behind a pooler,
        always; else once the lease it was refused can have lapsed, or when the
        listening session heard it given back (what else it heard is kept for
        :meth:`wait_for_jobs`)."""
        if self.pooled is not None or time.monotonic() >= self._ask_after:
            return True
        session = self._session
        if session is None or session.closed or session.broken:
            return True  # the ask opens it again; a notice sent meanwhile is lost
        return not self._take_in(session) or time.monotonic() >= self._ask_after

    def _take_in(self, session: Connection) -> bool:
        """Keep what the listening session heard for the next :meth:`wait_for_jobs`, at
        most :data:`UNREAD_MOST` wake-ups (past that, one of every queue). False when
        the session was lost (dropped: the next use opens another)."""
        try:
            self._unread.extend(self._heard(session))
        except psycopg.Error:
            self._drop_session()
            return False
        if len(self._unread) > UNREAD_MOST or Wakeup() in self._unread:
            self._unread = [Wakeup()]  # every queue: the rest says no more
        return True

    def _lease_params(self, generation: int | None) -> dict[str, object]:
        return {
            "name": LEASE_NAME,
            "holder": self.holder,
            "generation": generation,
            "seconds": self.lease_seconds,
        }

    def _give_back(self) -> None:
        """Let the next engine take the lease at once (this one is closing)."""
        held, self.generation = self.generation, None
        params = self._lease_params(held) | {"channel": self.channel, "notice": LEASE_FREED}
        if held is not None and self.pooled is not None:
            give_back = self._give_back_sql
            with contextlib.suppress(BackendError):
                self.pooled.run(lambda conn: conn.execute(give_back, params), retry=False)
            return
        session = self._session
        if held is None or session is None or session.closed or session.broken:
            return
        with contextlib.suppress(psycopg.Error):
            session.execute(self._give_back_sql, params)

    @property
    def listening(self) -> bool:
        """Whether the listening session is up (an idle worker may then poll seldom)."""
        session = self._session
        return self.pooled is None and session is not None and not session.broken

    def wake_channel(self) -> str:
        """What a worker writes in its row of the workers table: its own channel, where
        enqueues tell it its turns, once the session listens on it; '' when nothing
        listens (``pooled``: the worker takes no turn and polls)."""
        if self.pooled is not None:
            return ""
        with self._session_lock, contextlib.suppress(BackendError, psycopg.Error):
            # Listening before the row says so: a turn told before would be lost.
            self._listening_session()
        return self.own_channel

    def wait_for_jobs(self, timeout: float) -> list[Wakeup]:
        """Block until an enqueue notifies this engine (on :attr:`own_channel` or the
        schema's channel), :meth:`wake` is called, or ``timeout`` passes.

        Returns what was heard, each notification as a :class:`Wakeup` (the
        enqueue's queue, count and first id), or one for every queue when
        :meth:`wake` was called or the listening session was lost (the caller
        should claim, and poll until it is back); empty when the timeout
        passed. Without a listening session (server down, or ``pooled``) this
        just waits.
        """
        with self._session_lock:
            wake_fd = self._wakes.fileno()
            try:
                if self.pooled is not None:
                    raise BackendError("no listening session behind a transaction pooler")
                session = self._listening_session()
            except BackendError:
                if self._unread:
                    heard, self._unread = self._unread, []
                    return heard
                select.select([wake_fd], [], [], timeout)
                return [Wakeup()] if self._wakes.drain() else []
            deadline = time.monotonic() + timeout
            try:
                # Notifications that came while the session ran another statement
                # (the maintenance lease) wait in psycopg's backlog: read them first.
                heard, self._unread = self._unread, []
                while not (heard := heard or self._heard(session)):
                    if session.broken:
                        raise psycopg.OperationalError("the listening session was lost")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return []
                    readable = [session.pgconn.socket, wake_fd]
                    ready, _, _ = select.select(readable, [], [], remaining)
                    if self._wakes.drain():
                        return [Wakeup()]
                    if not ready:
                        return []
                return heard
            except (psycopg.Error, OSError):
                self._drop_session()
                return [Wakeup()]

    def wake(self) -> None:
        """End a :meth:`wait_for_jobs` at once (safe in a signal handler or another thread)."""
        self._wakes.wake()

    def _heard(self, session: Connection) -> list[Wakeup]:
        """Every notification that has come, without waiting; a lease given back
        (:data:`LEASE_FREED`) is no wake-up: this engine asks for it at its next round."""
        heard = []
        for note in session.notifies(timeout=0):
            if note.payload == LEASE_FREED:
                self._ask_after = 0.0
            else:
                heard.append(Wakeup.parse(note.payload))
        return heard

    def _listening_session(self) -> Connection:
        """The long-lived session that listens for enqueues and renews the maintenance lease."""
        self._forget_if_forked()
        session = self._session
        if session is None or session.closed or session.broken:
            self._drop_session()
            session = connect(self.conninfo, connect_timeout=self.connect_timeout)
            try:
                for channel in (self.channel, self.own_channel):
                    session.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            except psycopg.Error:
                session.close()  # not kept half listening; the caller polls meanwhile
                raise
            self._session = session
        return session

    def _drop_session(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            with contextlib.suppress(psycopg.Error):
                session.close()
