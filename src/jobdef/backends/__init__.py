"""Job storage backends: the :class:`~jobdef.backends.protocol.Backend` protocol and its engines.

``open_backend(url)`` picks the engine from the URL scheme: ``sqlite:///path.db``
(the embedded default) or ``postgresql://...``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from urllib.parse import urlsplit

from jobdef.backends.protocol import Backend
from jobdef.errors import BackendError

# URL scheme -> "module:class" of the engine, imported only when used.
ENGINES: dict[str, str] = {
    "sqlite": "jobdef.backends.sqlite.engine:SQLiteBackend",
    "postgresql": "jobdef.backends.postgres.engine:PostgresBackend",
    "postgres": "jobdef.backends.postgres.engine:PostgresBackend",
}


def engine_class(url: str) -> type:
    """The engine class for ``url``'s scheme."""
    scheme = urlsplit(url).scheme
    if scheme not in ENGINES:
        raise BackendError(
            f"database URL {url!r} has an unknown scheme {scheme or '(none)'!r}; write "
            "sqlite:///path/to/jobdef.db or postgresql://user@host/dbname"
        )
    module_name, _, class_name = ENGINES[scheme].partition(":")
    try:
        module = importlib.import_module(module_name)
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
    engine: type = getattr(module, class_name)  # a class, as ENGINES names it
    return engine


def open_backend(
    url: str,
    *,
    clock: Callable[[], float] | None = None,
    create: bool = True,
    migrate: bool = True,
) -> Backend:
    """Open the job store at ``url`` and bring its schema up to date.

    ``create=False`` refuses to create a new SQLite file, or the tables in a
    PostgreSQL schema that has none (operator commands use it, so a mistyped
    path or schema is an error, not a new empty database).
    """
    cls = engine_class(url)
    backend: Backend = cls(url, clock=clock, create=create)
    if migrate:
        try:
            backend.migrate()
        except BaseException:
            backend.close()  # a refused or failed migration leaves no connection open
            raise
    return backend


__all__ = ["ENGINES", "Backend", "engine_class", "open_backend"]
