"""The dashboard's view of the job store: bounded reads of its own, writes through the verbs.

Reads run the named queries of ``sqlite.sql`` / ``postgres.sql`` beside this
module (and the few the engine shares, :data:`SHARED_QUERIES`) on a connection
of their own (SQLite: opened read-only), so a page can never change a row.
Every change an operator makes goes through the same
:class:`~jobdef.backends.protocol.Backend` verbs as the CLI (``requeue``,
``resolve``, ``cancel``, ``set_paused``, ``outbox_retry``), each of which only
moves a row that is still in the state it expects: a second click finds the
job already moved and does nothing.
"""

from __future__ import annotations

import functools
import json
import math
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

# Reads the engine makes too (jobdef queues, the gauges), taken from its queries.sql
# so each has one text: the queue depths and one job's dead count.
SHARED_QUERIES = ("queue_depths", "dead_count")


def dashboard_queries(engine: str) -> dict[str, str]:
    """The dashboard's named queries on ``engine`` (``sqlite`` or ``postgres``)."""
    queries = load_queries("jobdef.dashboard", f"{engine}.sql")
    shared = load_queries(f"jobdef.backends.{engine}", "queries.sql")
    return {**queries, **{name: shared[name] for name in SHARED_QUERIES}}


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
        from jobdef.backends.sqlite.engine import BUSY_TIMEOUT_MS, database_errors, sqlite_path

        path, _ = sqlite_path(url)
        # A driver error (corrupted, disk failing) is one BackendError, as in the engine.
        self._errors = functools.partial(database_errors, path)
        self._queries = dashboard_queries(self.engine)
        self._conn = sqlite3.connect(
            path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._lock = threading.Lock()

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        with self._lock, self._errors():
            cursor = self._conn.execute(self._queries[name], dict(params))
            return [dict(row) for row in cursor.fetchall()]

    def decode(self, value: Any) -> Any:
        return json_text(value)

    def close(self) -> None:
        self._conn.close()


# A GIN index is read only through a bitmap scan, which the reader's session turns off
# for every other query: these get it back, for their own transaction only.
BITMAP_QUERIES = frozenset({"jobs_by_args"})


class PostgresReader:
    """The dashboard's queries on a session of their own, in the store's schema."""

    engine = "postgres"

    def __init__(self, url: str) -> None:
        from jobdef.backends.postgres.session import SessionManager, split_url

        conninfo, schema = split_url(url)
        quoted = '"' + schema + '"'
        queries = dashboard_queries(self.engine)
        self._queries = {name: sql.replace("{schema}", quoted) for name, sql in queries.items()}
        # Read-only, and planned as the queries are written: index walks that stop
        # early, no bitmap scans, no parallel workers and no JIT (whose start-up costs
        # more than any of these small reads).
        settings = (
            "SET default_transaction_read_only = on; SET enable_bitmapscan = off; "
            "SET max_parallel_workers_per_gather = 0; SET jit = off"
        )
        self.sessions = SessionManager(conninfo, schema, settings=settings, reconnect_timeout=5)

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._run(self._queries[name], name, params)

    def explain(self, name: str, params: Mapping[str, Any]) -> str:
        """The plan PostgreSQL picks for one named query as :meth:`rows` runs it (same
        session settings): what a test or an operator checks the indexes against."""
        query = "EXPLAIN " + self._queries[name]
        rows = self._run(query, name, params)
        return "\n".join(str(row["QUERY PLAN"]) for row in rows)

    def _run(self, sql: str, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        from psycopg.rows import dict_row

        bitmap = name in BITMAP_QUERIES

        def work(conn: Any) -> list[dict[str, Any]]:
            with conn.cursor(row_factory=dict_row) as cur:
                if not bitmap:  # autocommit: one round trip
                    found: list[dict[str, Any]] = cur.execute(sql, dict(params)).fetchall()
                    return found
                with conn.transaction():
                    cur.execute("SET LOCAL enable_bitmapscan = on")
                    found = cur.execute(sql, dict(params)).fetchall()
                    return found

        result: list[dict[str, Any]] = self.sessions.run(work)
        return result

    def decode(self, value: Any) -> Any:
        return decoded(value)

    def close(self) -> None:
        self.sessions.close()


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


# The migration that adds PostgreSQL's index on args (jobdef_jobs_args), which the
# args search reads; SQLite's 0006 widens its running-rows index instead.
ARGS_INDEX_VERSION = 6
# The JSON literals an args qualifier's value may spell, beside its text.
_LITERALS = ("true", "false", "null")
INT64 = 2**63


def arg_number(value: str) -> int | float | None:
    """The JSON number ``value`` spells (``42``, ``-1.5``, ``1e3``), or None: ``NaN``,
    ``Infinity``, ``042`` and ``0x2a`` are not JSON numbers, they stay text."""

    def refuse(constant: str) -> None:
        raise ValueError(constant)

    try:
        number = json.loads(value, parse_constant=refuse)
    except ValueError:
        return None
    if isinstance(number, bool) or not isinstance(number, int | float):
        return None
    if isinstance(number, float) and not math.isfinite(number):
        return None
    return number


def arg_match(engine: str, key: str, value: str) -> dict[str, Any]:
    """The query parameters of the qualifier ``args.KEY:VALUE`` on ``engine``.

    It matches a job whose arg at KEY (dots go into nested objects) is the string
    VALUE, or the JSON number, ``true``, ``false`` or ``null`` that VALUE spells:
    ``args.id:42`` finds ``{"id": 42}`` and ``{"id": "42"}``, ``42`` also finds
    ``42.0`` (numbers compare by value). On PostgreSQL both forms are jsonb
    documents for ``args @>`` (containment, which the GIN index jsonb_path_ops
    answers); on SQLite a JSON path and the typed forms for json_type/json_extract.
    """
    parts = key.split(".")
    number = arg_number(value)
    literal = value if value in _LITERALS else None
    if engine == "sqlite":
        if isinstance(number, int) and not -INT64 <= number < INT64:
            # Beyond SQLite's integers: compared as a REAL, or, past a float's range,
            # as no number at all (no stored arg can hold one).
            try:
                number = float(number)
            except OverflowError:
                number = None
        return {
            "arg_path": "$." + ".".join(f'"{part}"' for part in parts),
            "arg_text": value,
            "arg_number": number,
            "arg_literal": literal,
            # What json_extract reads a JSON true or false as.
            "arg_truth": {"true": 1, "false": 0}.get(value),
        }
    # The number keeps the digits as written (jsonb's numeric is exact).
    typed = value if number is not None or literal is not None else json.dumps(value)
    as_text, as_typed = json.dumps(value), typed
    for part in reversed(parts):
        as_text = "{" + json.dumps(part) + ": " + as_text + "}"
        as_typed = "{" + json.dumps(part) + ": " + as_typed + "}"
    return {"arg_text": as_text, "arg_typed": as_typed}


def ids_of(rows: Sequence[Row]) -> list[int]:
    return [int(row["id"]) for row in rows]
