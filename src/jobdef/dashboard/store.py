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

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from jobdef.backends import open_backend
from jobdef.backends.postgres.reader import PostgresReader
from jobdef.backends.protocol import Backend, Reader
from jobdef.backends.rows import job_record
from jobdef.backends.sqlite.reader import SQLiteReader
from jobdef.errors import BackendError

Row = Mapping[str, Any]


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


def ids_of(rows: Sequence[Row]) -> list[int]:
    return [int(row["id"]) for row in rows]
