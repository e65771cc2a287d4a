"""Job storage backends: the :class:`~jobdef.backends.protocol.Backend` protocol and its engines.

``open_backend(url)`` picks the engine from the URL scheme: ``sqlite:///path.db``
(the embedded default) or ``postgresql://...``, each registered in
:mod:`jobdef.backends.engines`. The functions here are how the rest of jobdef
reaches a store, through its engine's :class:`~jobdef.backends.protocol.Driver`.

Only ``jobdef db upgrade`` (:func:`upgrade`), a starting worker and
``connect()`` create or migrate tables. The operator commands open the store
with ``create=False``: they change nothing, and a store without jobdef tables,
or with tables of an older version, is one line saying to run ``jobdef db
upgrade``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobdef.backends.engines import (
    ENGINES,
    connection_modules,
    default_driver,
    driver,
    driver_for_connection,
)
from jobdef.backends.protocol import Backend, ListensForChanges, Reader, Watcher
from jobdef.backends.schema import require_current
from jobdef.backends.sql import migration_files
from jobdef.errors import UsageError
from jobdef.records import Record, record
from jobdef.redact import redact


def record_processed_key(
    connection: Any, key: str, job_id: int, *, now: float, store_url: str
) -> bool:
    """Record ``key`` on the handler's own DB-API ``connection``, in its transaction, with
    the SQL of that connection's database; False when it was recorded before.

    The engine is chosen by the connection's module, not by the job store: the
    handler's database need not be the job database.
    """
    library = type(connection).__module__.partition(".")[0]
    found = driver_for_connection(library)
    if found is None:
        raise UsageError(
            f"first_run() got a {type(connection).__name__} from {library}; pass the "
            f"connection the handler writes with (of {', '.join(connection_modules())}), "
            "or Django's `connection`"
        )
    return found.record_processed_key(connection, key, job_id, now, store_url)


def open_backend(
    url: str,
    *,
    clock: Callable[[], float] | None = None,
    create: bool = True,
    migrate: bool = True,
) -> Backend:
    """Open the job store at ``url``.

    ``create=True`` (``jobdef db upgrade``, a starting worker, ``connect()``):
    create the tables, or bring them to the newest version. ``create=False``
    (operator commands): create nothing, not even a SQLite file, and migrate
    nothing; a store without jobdef tables, or at an older version, is a
    :class:`BackendError` that says to run ``jobdef db upgrade``.
    ``migrate=False``: no schema step at all (the caller knows the store is
    current, or needs only the engine's dialect).
    """
    backend = driver(url).open(url, clock=clock, create=create)
    if migrate:
        try:
            if create:
                backend.migrate()
            else:
                require_current(backend, url, describe_store(url))
        except BaseException:
            backend.close()  # a refused or failed migration leaves no connection open
            raise
    return backend


@record
class SchemaStatus(Record):
    """Where a store's schema stands: the version applied and the migrations shipped."""

    current: int
    # (version, file name) of every numbered migration this jobdef ships.
    migrations: tuple[tuple[int, str], ...]

    @property
    def latest(self) -> int:
        return self.migrations[-1][0]

    @property
    def pending(self) -> list[tuple[int, str]]:
        return [(number, name) for number, name in self.migrations if number > self.current]


def schema_status(url: str) -> SchemaStatus:
    """The schema version of the store at ``url``, read without changing anything."""
    found = driver(url)
    migrations = tuple((number, name) for number, name, _ in migration_files(found.migrations))
    backend = found.open(url, create=False)
    try:
        return SchemaStatus(backend.schema_version(), migrations)
    finally:
        backend.close()


def upgrade(url: str, *, clock: Callable[[], float] | None = None) -> tuple[int, int]:
    """Create the store's tables or migrate them; the versions before and after."""
    backend = driver(url).open(url, clock=clock, create=True)
    try:
        before = backend.schema_version()
        backend.migrate()
        return before, backend.schema_version()
    finally:
        backend.close()


def describe_store(url: str) -> str:
    """Where the store is, for messages: ``app.db`` or ``schema 'x' at user@host:5432/db``."""
    return driver(url).describe(url)


def open_reader(url: str) -> Reader:
    """A read-only session on the store at ``url`` for the pages that show it."""
    return driver(url).open_reader(url)


def listen_for_changes(url: str, on_change: Callable[[], None]) -> Watcher | None:
    """A watcher that calls ``on_change`` when the store at ``url`` changes (not started),
    or None when its engine tells no one: the caller polls."""
    found = driver(url)
    if isinstance(found, ListensForChanges):
        return found.listen_for_changes(url, on_change)
    return None


def scratch_store(url: str | None, folder: Path | None = None) -> tuple[str, Callable[[], None]]:
    """``(url, cleanup)`` of a new, empty store for one test: beside ``url`` (the same
    server, a schema of its own), or with ``url`` None one of the default engine in
    ``folder`` (default a new temporary folder). ``cleanup`` removes it."""
    found = default_driver() if url is None else driver(url)
    return found.scratch_store(url, folder)


__all__ = [
    "ENGINES",
    "Backend",
    "SchemaStatus",
    "describe_store",
    "listen_for_changes",
    "open_backend",
    "open_reader",
    "redact",
    "require_current",
    "schema_status",
    "scratch_store",
    "upgrade",
]
