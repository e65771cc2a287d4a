"""Job storage backends: the :class:`~jobdef.backends.protocol.Backend` protocol and its engines.

``open_backend(url)`` picks the engine from the URL scheme: ``sqlite:///path.db``
(the embedded default) or ``postgresql://...``.

Only ``jobdef db upgrade`` (:func:`upgrade`), a starting worker and
``connect()`` create or migrate tables. The operator commands open the store
with ``create=False``: they change nothing, and a store without jobdef tables,
or with tables of an older version, is one line saying to run ``jobdef db
upgrade``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from jobdef.backends.protocol import Backend
from jobdef.backends.schema import Versioned, require_current
from jobdef.backends.sql import migration_files
from jobdef.errors import BackendError, UsageError
from jobdef.redact import redact

# URL scheme -> "module:class" of the engine, imported only when used.
ENGINES: dict[str, str] = {
    "sqlite": "jobdef.backends.sqlite.engine:SQLiteBackend",
    "postgresql": "jobdef.backends.postgres.engine:PostgresBackend",
    "postgres": "jobdef.backends.postgres.engine:PostgresBackend",
}


def engine_module(url: str) -> ModuleType:
    """The module of the engine for ``url``'s scheme (it names its ``MIGRATIONS``)."""
    scheme = urlsplit(url).scheme
    if scheme not in ENGINES and "://" not in url:
        # Not a URL: shown it could be a password (``user:pw@host`` parses as scheme 'user').
        raise BackendError(
            "the database URL is not a URL (no '://'); write "
            "sqlite:///path/to/jobdef.db or postgresql://user@host/dbname"
        )
    if scheme not in ENGINES:
        raise BackendError(
            f"database URL {redact(url)!r} has an unknown scheme {scheme or '(none)'!r}; write "
            "sqlite:///path/to/jobdef.db or postgresql://user@host/dbname"
        )
    module_name = ENGINES[scheme].partition(":")[0]
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        if exc.name == module_name:
            raise BackendError(
                f"this jobdef has no {scheme} engine ({module_name} is missing); "
                "install a jobdef release that includes it"
            ) from None
        raise BackendError(
            f"the {scheme} engine needs {exc.name}, which is not installed; "
            "run: pip install 'jobdef[postgres]'"
        ) from None


# The DB-API modules whose connections a handler may pass to first_run(), and the engine
# module that writes processed keys on each: chosen by the connection, not by the job
# store, since the handler's database need not be the job database.
HANDLER_CONNECTIONS: dict[str, str] = {
    "sqlite3": "jobdef.backends.sqlite.engine",
    "psycopg": "jobdef.backends.postgres.engine",
    "psycopg2": "jobdef.backends.postgres.engine",
}


def record_processed_key(
    connection: Any, key: str, job_id: int, *, now: float, store_url: str
) -> bool:
    """Record ``key`` on the handler's own DB-API ``connection``, in its transaction, with
    the SQL of that connection's database; False when it was recorded before."""
    library = type(connection).__module__.partition(".")[0]
    if library not in HANDLER_CONNECTIONS:
        raise UsageError(
            f"first_run() got a {type(connection).__name__} from {library}; pass the "
            "connection the handler writes with: sqlite3, psycopg (3, or psycopg2 under "
            "Django), or Django's `connection`"
        )
    module = importlib.import_module(HANDLER_CONNECTIONS[library])
    recorded: bool = module.record_processed_key_on(connection, key, job_id, now, store_url)
    return recorded


def engine_class(url: str) -> type:
    """The engine class for ``url``'s scheme."""
    cls: type = getattr(engine_module(url), ENGINES[urlsplit(url).scheme].partition(":")[2])
    return cls


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
    backend = engine_class(url)(url, clock=clock, create=create)
    if migrate:
        try:
            if create:
                backend.migrate()
            else:
                require_current(backend, url, describe_store(url))
        except BaseException:
            backend.close()  # a refused or failed migration leaves no connection open
            raise
    opened: Backend = backend
    return opened


@dataclass(frozen=True, slots=True)
class SchemaStatus:
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
    migrations = tuple(
        (number, name) for number, name, _ in migration_files(engine_module(url).MIGRATIONS)
    )
    backend: Versioned = engine_class(url)(url, create=False)
    try:
        return SchemaStatus(backend.schema_version(), migrations)
    finally:
        backend.close()


def upgrade(url: str, *, clock: Callable[[], float] | None = None) -> tuple[int, int]:
    """Create the store's tables or migrate them; the versions before and after."""
    backend: Versioned = engine_class(url)(url, clock=clock, create=True)
    try:
        before = backend.schema_version()
        backend.migrate()
        return before, backend.schema_version()
    finally:
        backend.close()


def describe_store(url: str) -> str:
    """Where the store is, for messages: ``app.db`` or ``schema 'x' at user@host:5432/db``."""
    if urlsplit(url).scheme == "sqlite":
        from jobdef.backends.sqlite.engine import sqlite_path

        return str(sqlite_path(url)[0])
    from jobdef.backends.postgres.session import describe, split_url

    conninfo, schema = split_url(url)
    return f"schema {schema!r} at {describe(conninfo)}"


__all__ = [
    "ENGINES",
    "Backend",
    "SchemaStatus",
    "describe_store",
    "engine_class",
    "open_backend",
    "redact",
    "require_current",
    "schema_status",
    "upgrade",
]
