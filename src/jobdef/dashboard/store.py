"""The dashboard's view of the job store: bounded reads of its own, writes through the verbs.

Reads run the named queries of the engine's reader
(:class:`~jobdef.backends.protocol.Reader`, opened by
:func:`~jobdef.backends.open_reader`) on a read-only session of their own, so a
page can never change a row.
Every change an operator makes goes through the same
:class:`~jobdef.backends.protocol.Backend` verbs as the CLI (``requeue``,
``resolve``, ``cancel``, ``set_paused``, ``outbox_retry``), each of which only
moves a row that is still in the state it expects: a second click finds the
job already moved and does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jobdef.backends import open_backend, open_reader
from jobdef.backends.protocol import Backend, Reader
from jobdef.backends.records import JobRecord
from jobdef.errors import BackendError

Row = Mapping[str, Any]


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
            self.reader: Reader = open_reader(url)
        except BaseException:
            self.verbs.close()
            raise
        self.clock: Callable[[], float] = self.verbs.clock
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

    def job_row(self, row: Row) -> JobRecord:
        return self.reader.job(row)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.reader.close()
            self.verbs.close()


def ids_of(rows: Sequence[Row]) -> list[int]:
    return [int(row["id"]) for row in rows]
