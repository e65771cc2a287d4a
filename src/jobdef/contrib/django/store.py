"""The job store is the application's own database: its URL, read from ``DATABASES``.

Jobs are written on Django's connection for that database (inside the caller's
``transaction.atomic()``), and read, claimed and finished by jobdef's own engine
on a connection of its own to the same database, so both must name one store.
The engine is the one registered for the DB-API module Django's database backend
connects through (:mod:`jobdef.backends.engines`), as ``first_run()`` chooses it for
a handler's connection; that engine's driver writes the URL.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.utils import load_backend

from jobdef.backends.engines import connection_modules, driver_for_connection, titles
from jobdef.backends.records import StoreSettings
from jobdef.errors import BackendError


def store_url(alias: str, settings_dict: dict[str, Any], schema: str | None = None) -> str:
    """jobdef's URL for the database ``alias`` of ``DATABASES`` (``settings_dict``).

    ``schema`` (on an engine with schemas) is where jobdef's tables live; the default
    is the engine's (``public``). Raises :class:`ImproperlyConfigured` for a database
    jobdef cannot share.
    """
    engine = str(settings_dict.get("ENGINE") or "")
    module, why = _dbapi_module(engine)
    driver = driver_for_connection(module) if module else None
    if driver is None:
        raise ImproperlyConfigured(
            f"DATABASES[{alias!r}] uses {engine or 'no ENGINE'}; jobdef stores jobs on "
            f"{titles()} (a Django database backend that connects through "
            f"{', '.join(connection_modules())}){why}"
        )
    settings = StoreSettings(
        name=str(settings_dict.get("NAME") or ""),
        user=str(settings_dict.get("USER") or ""),
        password=str(settings_dict.get("PASSWORD") or ""),
        host=str(settings_dict.get("HOST") or ""),
        port=str(settings_dict.get("PORT") or ""),
        schema=schema,
    )
    if settings.name == f"file:memorydb_{alias}?mode=memory&cache=shared":
        raise ImproperlyConfigured(
            f"Django's test database for DATABASES[{alias!r}] is in memory (SQLite's "
            "default for tests), which jobdef's own connection and a worker cannot "
            f"open; give it a file: DATABASES[{alias!r}]['TEST'] = "
            "{'NAME': BASE_DIR / 'test_db.sqlite3'}"
        )
    try:
        return driver.url_from_settings(settings)
    except BackendError as exc:
        raise ImproperlyConfigured(f"DATABASES[{alias!r}] {exc.message}") from None


def _dbapi_module(engine: str) -> tuple[str | None, str]:
    """The name of the DB-API module the database backend ``engine`` connects through,
    or None and why Django cannot load it."""
    if not engine:
        return None, ""
    try:
        database = load_backend(engine).DatabaseWrapper.Database
    except (ImproperlyConfigured, ImportError, AttributeError) as exc:
        # Its first sentence: Django goes on to list its own backends.
        said = str(exc).strip().partition(". ")[0].splitlines()
        return None, f"; Django cannot load it: {said[0] if said else type(exc).__name__}"
    return str(database.__name__), ""
