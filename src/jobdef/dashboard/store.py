"""The dashboard's view of the job store: bounded reads of its own, writes through the verbs.

Reads run the named queries of ``sqlite.sql`` / ``postgres.sql`` beside this
module on a connection of their own (SQLite: opened read-only), so a page can
never change a row. Every change an operator makes goes through the same
:class:`~jobdef.backends.protocol.Backend` verbs as the CLI (``requeue``,
``resolve``, ``cancel``, ``set_paused``, ``outbox_retry``), each of which only
moves a row that is still in the state it expects: a second click finds the
job already moved and does nothing.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.rows import decoded, job_record, json_text
from jobdef.backends.sql import load_queries
from jobdef.errors import BackendError

Row = Mapping[str, Any]


class Reader(Protocol):
    """Runs one named dashboard query and returns its rows as dicts."""

    engine: str

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]: ...

    def decode(self, value: Any) -> Any: ...

    def close(self) -> None: ...


class SQLiteReader:
    """The dashboard's queries on a read-only connection to the SQLite file."""

    engine = "sqlite"

    def __init__(self, url: str) -> None:
        from jobdef.backends.sqlite.engine import BUSY_TIMEOUT_MS, sqlite_path

        path, _ = sqlite_path(url)
        self._queries = load_queries("jobdef.dashboard", "sqlite.sql")
        self._conn = sqlite3.connect(
            path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._lock = threading.Lock()

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._conn.execute(self._queries[name], dict(params))
            return [dict(row) for row in cursor.fetchall()]

    def decode(self, value: Any) -> Any:
        return json_text(value)

    def close(self) -> None:
        self._conn.close()


class PostgresReader:
    """The dashboard's queries on a session of their own, in the store's schema."""

    engine = "postgres"

    def __init__(self, url: str) -> None:
        from jobdef.backends.postgres.session import SessionManager, split_url

        conninfo, schema = split_url(url)
        quoted = '"' + schema + '"'
        queries = load_queries("jobdef.dashboard", "postgres.sql")
        self._queries = {name: sql.replace("{schema}", quoted) for name, sql in queries.items()}
        # Read-only, and planned as the queries are written: index walks that stop
        # early, no bitmap scans, no parallel workers (whose start-up costs more than
        # any of these small reads).
        settings = (
            "SET default_transaction_read_only = on; SET enable_bitmapscan = off; "
            "SET max_parallel_workers_per_gather = 0"
        )
        self._sessions = SessionManager(conninfo, schema, settings=settings, reconnect_timeout=5)

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        from psycopg.rows import dict_row

        sql = self._queries[name]

        def work(conn: Any) -> list[dict[str, Any]]:
            with conn.cursor(row_factory=dict_row) as cur:
                found: list[dict[str, Any]] = cur.execute(sql, dict(params)).fetchall()
                return found

        result: list[dict[str, Any]] = self._sessions.run(work)
        return result

    def decode(self, value: Any) -> Any:
        return decoded(value)

    def close(self) -> None:
        self._sessions.close()


def open_reader(url: str) -> Reader:
    """The reader for ``url``'s engine."""
    if urlsplit(url).scheme == "sqlite":
        return SQLiteReader(url)
    return PostgresReader(url)


class Store:
    """The job store as the dashboard sees it: ``reader`` for pages, ``verbs`` for actions.

    The store must exist and be current (``jobdef db upgrade``): the dashboard
    creates and migrates nothing. Calls are serialised on one lock, since the
    engines' connections are shared by the server's threads.
    """

    def __init__(self, url: str, *, clock: Callable[[], float] | None = None) -> None:
        self.url = url
        self.verbs: Backend = open_backend(url, create=False, clock=clock)
        try:
            self.reader = open_reader(url)
        except BaseException:
            self.verbs.close()
            raise
        self.clock: Callable[[], float] = getattr(self.verbs, "clock", time.time)
        self._lock = threading.RLock()
        self._closed = False

    @property
    def engine(self) -> str:
        return self.reader.engine

    def rows(self, name: str, **params: Any) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            return self.reader.rows(name, params)

    def call(self, verb: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one backend verb under the store's lock."""
        with self._lock:
            self._check_open()
            return verb(*args, **kwargs)

    def _check_open(self) -> None:
        # A request still in flight at shutdown must not open a new session.
        if self._closed:
            raise BackendError("the dashboard is shutting down")

    def job_row(self, row: Row) -> Any:
        return job_record(row, self.reader.decode)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.reader.close()
            self.verbs.close()


def arg_path(engine: str, key: str) -> Any:
    """The JSON path of ``args.a.b`` for the engine: ``$.a.b`` (SQLite), ``{a,b}`` (PostgreSQL)."""
    parts = key.split(".")
    if engine == "sqlite":
        return "$." + ".".join(f'"{part}"' for part in parts)
    return parts


def ids_of(rows: Sequence[Row]) -> list[int]:
    return [int(row["id"]) for row in rows]
