"""The engines jobdef ships, found by the store URL's scheme: the one place an engine
is registered.

An engine is a package ``jobdef.backends.<engine>`` whose driver (a
:class:`~jobdef.backends.protocol.Driver`) is all the rest of jobdef knows of it;
adding one is its package, one :class:`Engine` entry in :data:`ENGINES`, and its
tests. Nothing outside :mod:`jobdef.backends` names an engine
(``tests/test_engine_names.py`` reads every module to hold that).
"""

from __future__ import annotations

import importlib
from urllib.parse import urlsplit

from jobdef.backends.protocol import Driver
from jobdef.errors import BackendError
from jobdef.records import Record, record
from jobdef.redact import redact


@record
class Engine(Record):
    """One registered engine: where its driver is, and what names it."""

    # "module:attribute" of its driver, imported only when a store of it is used.
    driver: str
    # The URL schemes of its stores.
    schemes: tuple[str, ...]
    # The DB-API modules (top-level names) whose connections it writes processed keys
    # on (first_run), and whose databases an application can share with it (Django).
    connections: tuple[str, ...]
    # Its name in sentences, and a URL of it that a message can show.
    title: str
    example: str
    # The pip extra that installs the library it needs, if any.
    extra: str | None = None


# The first is the default: the embedded engine, which needs no server.
ENGINES: tuple[Engine, ...] = (
    Engine(
        "jobdef.backends.sqlite.driver:DRIVER",
        schemes=("sqlite",),
        connections=("sqlite3",),
        title="SQLite",
        example="sqlite:///path/to/jobdef.db",
    ),
    Engine(
        "jobdef.backends.postgres.driver:DRIVER",
        schemes=("postgresql", "postgres"),
        connections=("psycopg", "psycopg2"),
        title="PostgreSQL",
        example="postgresql://user@host/dbname",
        extra="postgres",
    ),
)


def _by_scheme(scheme: str) -> Engine | None:
    return next((e for e in ENGINES if scheme in e.schemes), None)


def _examples() -> str:
    return " or ".join(engine.example for engine in ENGINES)


def engine_for(url: str) -> Engine:
    """The registered engine of ``url``'s scheme; a URL of none is one line saying what to
    write."""
    scheme = urlsplit(url).scheme
    engine = _by_scheme(scheme)
    if engine is None and "://" not in url:
        # Not a URL: shown it could be a password (``user:pw@host`` parses as scheme 'user').
        raise BackendError(f"the database URL is not a URL (no '://'); write {_examples()}")
    if engine is None:
        raise BackendError(
            f"database URL {redact(url)!r} has an unknown scheme {scheme or '(none)'!r}; "
            f"write {_examples()}"
        )
    return engine


def driver(url: str) -> Driver:
    """The driver of the engine for ``url``'s scheme."""
    return load_driver(engine_for(url), urlsplit(url).scheme)


def default_driver() -> Driver:
    """The driver of the default engine (the first registered)."""
    first = ENGINES[0]
    return load_driver(first, first.schemes[0])


def driver_for_connection(module: str) -> Driver | None:
    """The driver of the engine registered for DB-API module ``module`` (its top-level
    name, e.g. of a handler's connection), or None."""
    top = module.partition(".")[0]
    for engine in ENGINES:
        if top in engine.connections:
            return load_driver(engine, engine.schemes[0])
    return None


def connection_modules() -> tuple[str, ...]:
    """Every DB-API module some engine is registered for, for messages."""
    return tuple(name for engine in ENGINES for name in engine.connections)


def titles() -> str:
    """The registered engines' names in a sentence: ``SQLite or PostgreSQL``."""
    names = [engine.title for engine in ENGINES]
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def load_driver(engine: Engine, scheme: str) -> Driver:
    """Import ``engine``'s driver; a part missing from this install is one line."""
    module_name, _, attribute = engine.driver.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if (exc.name or "").startswith("jobdef."):  # a part of jobdef, not a library
            raise BackendError(
                f"this jobdef has no {scheme} engine ({exc.name} is missing); "
                "install a jobdef release that includes it"
            ) from None
        install = f"jobdef[{engine.extra}]" if engine.extra else str(exc.name)
        raise BackendError(
            f"the {scheme} engine needs {exc.name}, which is not installed; "
            f"run: pip install '{install}'"
        ) from None
    found: Driver = getattr(module, attribute)
    return found
