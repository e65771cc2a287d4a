"""The job store is the application's own database: its URL, read from ``DATABASES``.

Jobs are written on Django's connection for that database (inside the caller's
``transaction.atomic()``), and read, claimed and finished by jobdef's own engine
on a connection of its own to the same database, so both must name one store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.core.exceptions import ImproperlyConfigured

SQLITE_ENGINE = "django.db.backends.sqlite3"
POSTGRES_ENGINES = ("django.db.backends.postgresql", "django.contrib.gis.db.backends.postgis")


def store_url(alias: str, settings_dict: dict[str, Any], schema: str | None = None) -> str:
    """jobdef's URL for the database ``alias`` of ``DATABASES`` (``settings_dict``).

    ``schema`` (PostgreSQL) is where jobdef's tables live; the default is ``public``.
    Raises :class:`ImproperlyConfigured` for a database jobdef cannot share.
    """
    engine = settings_dict.get("ENGINE", "")
    if engine == SQLITE_ENGINE:
        name = str(settings_dict.get("NAME") or "")
        if name == f"file:memorydb_{alias}?mode=memory&cache=shared":
            raise ImproperlyConfigured(
                f"Django's test database for DATABASES[{alias!r}] is in memory (SQLite's "
                "default for tests), which jobdef's own connection and a worker cannot "
                f"open; give it a file: DATABASES[{alias!r}]['TEST'] = "
                "{'NAME': BASE_DIR / 'test_db.sqlite3'}"
            )
        if not name or name == ":memory:" or "mode=memory" in name:
            raise ImproperlyConfigured(
                f"DATABASES[{alias!r}] is an in-memory SQLite database, which a worker "
                "process cannot open; give it a file NAME (e.g. BASE_DIR / 'db.sqlite3')"
            )
        if name.startswith("file:"):
            raise ImproperlyConfigured(
                f"DATABASES[{alias!r}] names a SQLite URI ({name.partition('?')[0]}); jobdef "
                "needs a plain file path as NAME"
            )
        return f"sqlite:///{Path(name).resolve()}"
    if engine in POSTGRES_ENGINES:
        return _postgres_url(settings_dict, schema)
    raise ImproperlyConfigured(
        f"DATABASES[{alias!r}] uses {engine or 'no ENGINE'}; jobdef stores jobs on SQLite "
        f"({SQLITE_ENGINE}) or PostgreSQL (django.db.backends.postgresql)"
    )


def _postgres_url(settings_dict: dict[str, Any], schema: str | None) -> str:
    user = quote(str(settings_dict.get("USER") or ""), safe="")
    password = quote(str(settings_dict.get("PASSWORD") or ""), safe="")
    host = str(settings_dict.get("HOST") or "")
    port = str(settings_dict.get("PORT") or "")
    name = quote(str(settings_dict.get("NAME") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    query: dict[str, str] = {}
    if host.startswith("/"):  # a Unix socket folder: libpq takes it as ?host=
        query["host"], host = host, ""
    elif ":" in host:  # an IPv6 address
        host = f"[{host}]"
    if port:
        host = f"{host}:{port}" if host else host
        if not host:
            query["port"] = port
    if schema:
        query["schema"] = schema
    suffix = f"?{urlencode(query, quote_via=quote)}" if query else ""
    return f"postgresql://{auth}{host}/{name}{suffix}"
