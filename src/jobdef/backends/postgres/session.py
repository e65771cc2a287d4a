"""Connecting to PostgreSQL, and turning what can go wrong into one sentence to act on.

A user who mistypes the URL, names a database that does not exist or lacks a
permission gets a :class:`~jobdef.errors.BackendError` that says what is wrong
and what to change, never a driver traceback. Passwords never appear in
messages.

:class:`SessionManager` is the engine's session for its verbs: it reopens the
connection after a fork or a lost session and translates every driver error.
"""

from __future__ import annotations

import os
import re
import select
import threading
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from jobdef.errors import BackendError
from jobdef.redact import redact

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict

    from jobdef.backends.postgres.jsonb import QuickJsonbBinaryLoader, QuickJsonbLoader
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

DEFAULT_SCHEMA = "public"
APPLICATION_NAME = "jobdef"
# URL parameters jobdef reads itself (libpq never sees them).
OUR_PARAMETERS = ("schema", "wake")
WAKE_MODES = ("listen", "poll")
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")
URL_HINT = "write it as postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]"

# Seconds a connection attempt may take: long enough for a far server, and what a
# caller waits for one that does not answer. A caller that rides out outages
# between its own work (the worker) tries for QUICK_CONNECT_TIMEOUT at most
# (libpq's least), once per try, and does its work between the tries.
CONNECT_TIMEOUT = 10
QUICK_CONNECT_TIMEOUT = 2

T = TypeVar("T")
Connection = Any  # psycopg.Connection[Any]; Any keeps the import optional

_INHERITED: list[Connection] = []  # see keep_inherited


def require_psycopg() -> None:
    if psycopg is None:
        raise BackendError(
            "the PostgreSQL backend needs psycopg 3; install it with pip install 'jobdef[postgres]'"
        )


def split_url(url: str, schema: str | None = None) -> tuple[str, str]:
    """The libpq connection string and the schema, taken from ``?schema=`` unless given.

    ``schema`` and ``wake`` (:func:`wake_mode`) are ours, not libpq's, so they are
    removed from the URL before connecting.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise BackendError(f"{redact(url)} is not a PostgreSQL URL; {URL_HINT}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    from_url = [value for key, value in query if key == "schema"]
    rest = [(key, value) for key, value in query if key not in OUR_PARAMETERS]
    chosen = schema or (from_url[-1] if from_url else None) or DEFAULT_SCHEMA
    check_schema_name(chosen)
    # quote, not urlencode's default quote_plus: libpq reads "+" as a plus sign.
    conninfo = urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
    if not parts.netloc:
        # urlunsplit drops an empty authority: postgresql:///db (libpq's local socket)
        # would come out as postgresql:/db, which libpq refuses.
        conninfo = f"{parts.scheme}://{conninfo.partition(':')[2]}"
    return conninfo, chosen


def wake_mode(url: str) -> str:
    """How idle workers learn of new jobs: ``?wake=listen`` (the default) or ``?wake=poll``.

    ``listen`` keeps a session per worker process that LISTENs for enqueues.
    ``poll`` is for a pooler in transaction mode (PgBouncer's ``pool_mode =
    transaction``), where a session is not kept between transactions: no LISTEN, no
    session setting, no prepared statement; idle workers poll every
    ``poll_interval`` (docs/operations.md says what works there and what does not).
    """
    found = [v for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True) if k == "wake"]
    mode = found[-1] if found else "listen"
    if mode not in WAKE_MODES:
        raise BackendError(
            f"?wake={mode} in the database URL is not a wake mode; write ?wake=listen "
            "(the default: LISTEN/NOTIFY) or ?wake=poll (behind PgBouncer in transaction mode)"
        )
    return mode


def check_schema_name(schema: str) -> None:
    if not _SCHEMA_NAME.fullmatch(schema):  # not match: "$" also matches before a last \n
        raise BackendError(
            f"schema name {schema!r} is not usable; use letters, digits and underscores, "
            "starting with a letter, at most 48 characters (e.g. ?schema=myapp_jobs)"
        )


def describe(conninfo: str) -> str:
    """``user@host:port/dbname`` for messages (no password)."""
    try:
        info = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return redact(conninfo)
    host = info.get("host") or "localhost"
    port = info.get("port") or "5432"
    user = f"{info['user']}@" if info.get("user") else ""
    return f"{user}{host}:{port}/{info.get('dbname') or ''}"


def connect(
    conninfo: str, *, connect_timeout: int = CONNECT_TIMEOUT, **kwargs: Any
) -> psycopg.Connection[Any]:
    """An autocommit connection, or a :class:`BackendError` that says what to fix."""
    require_psycopg()
    try:
        if "application_name" not in conninfo_to_dict(conninfo):
            # Lets an operator find jobdef's sessions in pg_stat_activity.
            kwargs.setdefault("application_name", APPLICATION_NAME)
        # The server converts what it sends to UTF-8, which the jsonb loaders read
        # (jsonb.py), whatever the database's own encoding (a LATIN1 one sent bytes
        # they could not decode, and every claim of a job with such args failed).
        kwargs["client_encoding"] = "utf8"
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=connect_timeout, **kwargs)
    except psycopg.ProgrammingError as exc:
        raise BackendError(
            f"invalid PostgreSQL URL {redact(conninfo)}: {first_line(exc)}; {URL_HINT}"
        ) from None
    except psycopg.OperationalError as exc:
        raise connect_error(conninfo, exc) from None


def connect_error(conninfo: str, exc: Exception) -> BackendError:
    """Explain a failed connection by its cause: host, database, role or password."""
    where = describe(conninfo)
    text = first_line(exc)
    database = re.search(r'database "([^"]+)" does not exist', text)
    if database:
        return BackendError(
            f"PostgreSQL at {where}: database {database.group(1)!r} does not exist; "
            f"create it (createdb {database.group(1)}) or fix the database name in the URL"
        )
    role = re.search(r'role "([^"]+)" does not exist', text)
    if role:
        return BackendError(
            f"PostgreSQL at {where}: role {role.group(1)!r} does not exist; "
            "fix the user name in the URL or create the role"
        )
    if "password authentication failed" in text or "no password supplied" in text:
        return BackendError(
            f"PostgreSQL at {where} refused the login: {text}; "
            "check the user and password in the URL (or PGPASSWORD / ~/.pgpass)"
        )
    if re.search(r"invalid .* value|invalid connection option", text):
        return BackendError(f"invalid PostgreSQL URL {redact(conninfo)}: {text}; {URL_HINT}")
    return BackendError(
        f"cannot connect to PostgreSQL at {where}: {text}; "
        "check the host and port in the database URL and that the server is running"
    )


def query_error(exc: Exception, schema: str, user: str | None) -> BackendError | None:
    """A message for a statement that failed for a reason the user can fix, else None."""
    text = first_line(exc)
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return BackendError(
            f"PostgreSQL role {user or '(current)'} lacks a permission: {text}; grant it "
            f"(e.g. GRANT USAGE, CREATE ON SCHEMA {schema} TO {user or 'the role'}, "
            "GRANT ALL ON ALL TABLES IN SCHEMA ...) or run `jobdef db upgrade` as the owner"
        )
    if isinstance(exc, pg_errors.UndefinedTable | pg_errors.InvalidSchemaName):
        return BackendError(
            f"the jobdef tables are missing in schema {schema!r} ({text}); "
            "run `jobdef db upgrade` with this database URL"
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return BackendError(
            f"the PostgreSQL server is read-only ({text}); point the URL at the primary"
        )
    if isinstance(exc, pg_errors.UntranslatableCharacter):
        return BackendError(
            f"the database's encoding cannot hold a character of what was sent ({text}); "
            "keep jobdef's tables in a UTF8 database (CREATE DATABASE ... ENCODING 'UTF8')"
        )
    return None


def is_connection_lost(exc: BaseException, conn: psycopg.Connection[Any] | None) -> bool:
    """True when ``exc`` means the session is gone (server restart, pg_terminate_backend)."""
    if isinstance(exc, pg_errors.AdminShutdown | pg_errors.CrashShutdown):
        return True
    return isinstance(exc, psycopg.OperationalError) and (conn is None or conn.broken)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def keep_inherited(conn: Connection | None) -> None:
    """Set aside a connection that a forked child inherited, without closing it.

    Closing it in the child would end the parent's session; it is only
    forgotten, and kept referenced so that garbage collection does not close it.
    """
    if conn is not None:
        _INHERITED.append(conn)


class SessionManager:
    """The engine's own session: opened on first use, replaced after a fork or a lost session.

    Every verb of the engine runs through :meth:`run`, which turns driver errors
    into :class:`~jobdef.errors.BackendError` (no password in the message).
    """

    def __init__(
        self,
        conninfo: str,
        schema: str,
        *,
        settings: str,
        reconnect_timeout: float,
        pooled: bool = False,
        plans: tuple[str, str] | None = None,
    ) -> None:
        self.conninfo = conninfo
        self.schema = schema
        self.settings = settings
        # The statements that set the planning of a worker's turn and set it back
        # (queries.sql: fixed_plans, fresh_plans); None: every statement as configured.
        self.plans = None if pooled else plans
        self._fixed_on: Connection | None = None  # the session the turn's planning is on
        # Behind a transaction pooler (?wake=poll): no session state, see _open_session.
        self.pooled = pooled
        self.reconnect_timeout = reconnect_timeout
        self.connect_timeout = CONNECT_TIMEOUT
        self._conn: Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._sent: Sent[Any] | None = None  # a statement whose answer is not read yet

    def _forget_if_forked(self) -> None:
        if os.getpid() != self._pid:
            keep_inherited(self._conn)
            self._conn = None
            self._pid = os.getpid()

    def connection(self) -> Connection:
        self._forget_if_forked()
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._drop(self._conn)
            self._conn = self._open_session()
        return self._conn

    def _open_session(self) -> Connection:
        """A new session for the verbs, with the planner kept on index walks.

        A queue table's statistics lag far behind its contents (a burst of
        enqueues into a table last analyzed empty). With such statistics the
        planner reads every queued row through a bitmap and sorts them, instead
        of walking the claim index and stopping after ``limit`` rows: claims
        then cost more the longer the queue. Every statement here is written
        for an index walk, so this engine's own sessions (never a caller's)
        do without bitmap scans, and without JIT compiling, which only pays off
        for long analytic queries. They also ask the server to look for a lost
        client while a statement runs, so a killed worker's statement that waits on
        a lock is aborted rather than run on after its death (see queries.sql).

        Behind a transaction pooler (``pooled``) the session is not ours between
        transactions: a SET would stay on a server connection that other clients
        get next, and a prepared statement would be missing on the next one. So
        neither is used there (``prepare_threshold=None``; the settings go on
        the role instead, as docs/operations.md shows).

        jsonb columns are read by :class:`QuickJsonbLoader`, or its binary twin in a
        claim's binary rows (see jsonb.py).
        """
        pooled = {"prepare_threshold": None} if self.pooled else {}
        conn = connect(self.conninfo, connect_timeout=self.connect_timeout, **pooled)
        conn.adapters.register_loader("jsonb", QuickJsonbLoader)
        conn.adapters.register_loader("jsonb", QuickJsonbBinaryLoader)
        if self.pooled:
            return conn
        try:
            conn.execute(self.settings)
        except psycopg.Error as exc:
            conn.close()
            raise self.translate(exc) from None
        return conn

    @staticmethod
    def _drop(conn: Connection | None) -> None:
        if conn is not None and not conn.closed:
            conn.close()

    def fail_fast(self) -> None:
        """From now on, one quick reconnect per call: a lost server is reported at once.

        For a caller that rides out an outage itself, between its own work:
        waiting here would hold that work up (the worker's signals, its
        children's timeouts, its heartbeats).
        """
        self.reconnect_timeout = 0.0
        self.connect_timeout = QUICK_CONNECT_TIMEOUT

    def run(
        self,
        work: Callable[[Connection], T],
        *,
        retry: bool = True,
        plan_once: bool | None = False,
    ) -> T:
        """Run ``work`` on the engine's connection; after a lost session, reconnect and rerun.

        A lost session (a restart, a failover, ``pg_terminate_backend``) is
        replaced for up to ``reconnect_timeout`` seconds, so a caller rides out
        a short outage (after :meth:`fail_fast`, one try at once); a server
        that never answered is reported at once.

        ``plan_once``: ``work`` runs only statements whose best plan depends neither
        on their parameters nor on the tables' size (a worker's turn), and they are
        planned once per session (:attr:`plans`). None: ``work`` runs only statements
        planned alike either way, under the session's planning as it is.
        """
        with self._lock:
            self.settle()
            for attempt in (1, 2):
                conn = self.connection()
                try:
                    self._plan(conn, plan_once)
                    return work(conn)
                except psycopg.Error as exc:
                    if not is_connection_lost(exc, conn):
                        raise self.translate(exc) from None
                    lost = self._lost(exc, conn)
                    if not retry or attempt == 2:
                        raise lost from None
                    self._reconnect()
            raise AssertionError("unreachable")  # pragma: no cover

    def send(self, sql: str, params: Mapping[str, Any], read: Callable[[Any], T]) -> Sent[T] | None:
        """Send ``sql`` (a worker's turn, planned once per session as :meth:`run`'s
        ``plan_once``) and return without waiting for its answer; :meth:`Sent.result`
        reads it (``read`` given the cursor, whose rows are binary), and so does the
        next use of the session, first. A worker's loop does its other work meanwhile
        (its handler processes' results, the next tasks) instead of waiting on the server.

        A session found lost as the statement goes out is replaced, as :meth:`run`
        does; one lost once it is out loses the answer (the statement may have run), and
        the caller treats that as any failed call (the worker keeps what it holds and
        records it again, fenced). None where the driver lacks the generator this rests
        on (a psycopg whose cursors have no ``_execute_gen``): the caller runs it with
        :meth:`run`."""
        with self._lock:
            self.settle()
            for attempt in (1, 2):
                conn = self.connection()
                cursor = conn.cursor(binary=True)
                execute = getattr(cursor, "_execute_gen", None)
                if execute is None:  # pragma: no cover - every psycopg 3 release has it
                    cursor.close()
                    return None
                try:
                    self._plan(conn, True)
                    steps = execute(sql, params)
                    with conn.lock:
                        wait = next(steps)  # sends the statement; then it waits for the answer
                except StopIteration:  # pragma: no cover - answered without a wait
                    steps, wait = None, None
                except psycopg.Error as exc:
                    cursor.close()
                    if not is_connection_lost(exc, conn):
                        raise self.translate(exc) from None
                    lost = self._lost(exc, conn)
                    if attempt == 2:
                        raise lost from None
                    self._reconnect()
                    continue
                sent = Sent(self, conn, cursor, steps=steps, wait=wait, read=read)
                self._sent = sent if steps is not None else None
                return sent
            raise AssertionError("unreachable")  # pragma: no cover

    def settle(self) -> None:
        """Read the answer of the statement sent last, if it is not read yet: the session
        then serves the next statement."""
        with self._lock:
            if self._sent is not None:
                self._sent.settle()

    def _failure(self, exc: psycopg.Error, conn: Connection) -> Exception:
        """What a driver error on ``conn`` is to the caller (the session dropped if lost)."""
        if is_connection_lost(exc, conn):
            return self._lost(exc, conn)
        return self.translate(exc)

    def _lost(self, exc: psycopg.Error, conn: Connection) -> BackendError:
        self._drop(conn)
        if self._conn is conn:
            self._conn = None
        return BackendError(
            f"lost the connection to PostgreSQL at {describe(self.conninfo)}: "
            f"{first_line(exc)}; check that the server is up"
        )

    def _plan(self, conn: Connection, once: bool | None) -> None:
        """Set how the session plans, when that changes: on plans made once, or each
        statement as the session is configured (None: left as it is). Outside of the
        work's transaction, so that a rollback does not undo it; a new session starts as
        configured."""
        if self.plans is None or once is None or once == (conn is self._fixed_on):
            return
        conn.execute(self.plans[0] if once else self.plans[1])
        self._fixed_on = conn if once else None

    def _reconnect(self) -> None:
        """Connect again, waiting between tries (0.1 s doubling to 2 s) up to the timeout."""
        deadline = time.monotonic() + self.reconnect_timeout
        pause = 0.1
        while True:
            try:
                self._conn = self._open_session()
                return
            except BackendError:
                if time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 2.0)

    def translate(self, exc: psycopg.Error) -> Exception:
        user = None
        if self._conn is not None and not self._conn.closed:
            user = self._conn.info.user
        return query_error(exc, self.schema, user) or exc

    def close(self) -> None:
        with self._lock:
            self._forget_if_forked()
            if self._sent is not None and self._conn is not None and not self._conn.closed:
                self._sent.settle()  # what it did is then known to whoever asks
            self._sent = None
            self._drop(self._conn)
            self._conn = None


class Sent(Generic[T]):
    """A statement :meth:`SessionManager.send` sent, whose answer is read once: when
    asked for (:meth:`result`), or before the session's next statement (:meth:`settle`).
    :meth:`fileno` is the session's socket, readable once the answer starts to arrive:
    a caller waits on it among its own files."""

    def __init__(
        self,
        manager: SessionManager,
        conn: Connection,
        cursor: Any,
        *,
        steps: Generator[Any, Any, Any] | None,
        wait: Any,
        read: Callable[[Any], T],
    ) -> None:
        self._manager = manager
        self._read: Callable[[Any], T] | None = read
        self._conn = conn
        self._cursor = cursor
        self._steps = steps
        self._wait = wait
        self._socket = conn.pgconn.socket
        # Once the whole answer is in: (True, None), or (False, the error it is).
        self._answer: tuple[bool, Any] | None = None
        self._value: T | None = None  # what read made of it
        if steps is None:  # pragma: no cover - answered already
            self.settle()

    def fileno(self) -> int:
        return int(self._socket)

    def ready(self) -> bool:
        """Whether :meth:`result` would not wait: the answer was read (by the session's
        next statement, perhaps), or has started to arrive."""
        if self._answer is not None:
            return True
        poller = select.poll()  # not select.select: the socket's number may be above 1023
        poller.register(self._socket, select.POLLIN)
        return bool(poller.poll(0))

    def result(self) -> T:
        """The answer, ``read`` from the statement's cursor (once), waiting for it if need
        be; raises what the statement raised, as :meth:`SessionManager.run` would."""
        cursor = self.cursor()
        if self._read is not None:
            read, self._read = self._read, None
            try:
                self._value = read(cursor)
            finally:
                cursor.close()
        return self._value  # type: ignore[return-value]  # set by read, once

    def cursor(self) -> Any:
        """The statement's cursor, its answer all there (waiting for it if need be), to
        look at before :meth:`result` reads it; raises what the statement raised."""
        self.settle()
        assert self._answer is not None
        ok, error = self._answer
        if not ok:
            raise error
        return self._cursor

    def settle(self) -> None:
        """Wait for the whole answer and keep it (or the error it is) for :meth:`result`."""
        manager = self._manager
        with manager._lock:
            if self._answer is not None:
                return
            if manager._sent is self:
                manager._sent = None
            try:
                if self._steps is not None:
                    with self._conn.lock:
                        self._conn.wait(_resumed(self._wait, self._steps))
                self._answer = (True, None)
            except psycopg.Error as exc:
                self._cursor.close()
                self._answer = (False, manager._failure(exc, self._conn))


def _resumed(wait: Any, steps: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """``steps`` (psycopg's generator of a statement) from its wait for the answer, the
    first step (the send) having been taken: what psycopg's wait functions drive."""
    ready = yield wait
    while True:
        try:
            wait = steps.send(ready)
        except StopIteration as stop:
            return stop.value
        ready = yield wait
