"""The PostgreSQL engine as the rest of jobdef reaches it: its
:class:`~jobdef.backends.protocol.Driver`, which also listens for changes
(:class:`~jobdef.backends.protocol.ListensForChanges`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from jobdef.backends.postgres.changes import ChangeListener
from jobdef.backends.postgres.ends import EndListener
from jobdef.backends.postgres.engine import MIGRATIONS, PostgresBackend, record_processed_key_on
from jobdef.backends.postgres.reader import PostgresReader
from jobdef.backends.postgres.session import describe, split_url, wake_mode
from jobdef.backends.records import StoreSettings
from jobdef.errors import BackendError


class PostgresDriver:
    """Stores that are a schema each in a PostgreSQL database:
    ``postgresql://user@host/dbname?schema=name``."""

    name = "postgres"
    migrations = MIGRATIONS

    def open(
        self, url: str, *, clock: Callable[[], float] | None = None, create: bool = True
    ) -> PostgresBackend:
        return PostgresBackend(url, clock=clock, create=create)

    def describe(self, url: str) -> str:
        conninfo, schema = split_url(url)
        return f"schema {schema!r} at {describe(conninfo)}"

    def open_reader(self, url: str) -> PostgresReader:
        return PostgresReader(url)

    def listen_for_changes(self, url: str, on_change: Callable[[], None]) -> ChangeListener:
        conninfo, schema = split_url(url)
        return ChangeListener(conninfo, schema, on_change)

    def scratch_store(self, url: str | None, folder: Path | None) -> tuple[str, Callable[[], None]]:
        """The same server and database as ``url``, in a new schema ``jobdef_test_<random>``
        that the cleanup drops (a ``?schema=`` of the URL is replaced: a test never writes
        to the application's own schema)."""
        if url is None:
            raise BackendError("a scratch PostgreSQL store needs the URL of its server")
        schema = f"jobdef_test_{uuid.uuid4().hex[:12]}"
        parts = urlsplit(url)
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
        new = urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))
        conninfo = urlunsplit(parts._replace(query=urlencode(query)))

        def drop() -> None:
            import psycopg

            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

        return new, drop

    def url_from_settings(self, settings: StoreSettings) -> str:
        """A URL libpq reads as those settings: the password percent-encoded, a Unix
        socket folder as ``?host=``, an IPv6 address in brackets."""
        user = quote(settings.user, safe="")
        password = quote(settings.password, safe="")
        host, port = settings.host, settings.port
        name = quote(settings.name, safe="")
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
        if settings.schema:
            query["schema"] = settings.schema
        suffix = f"?{urlencode(query, quote_via=quote)}" if query else ""
        return f"postgresql://{auth}{host}/{name}{suffix}"

    def record_processed_key(
        self, connection: Any, key: str, job_id: int, now: float, store_url: str
    ) -> bool:
        return record_processed_key_on(connection, key, job_id, now, store_url)

    def end_signal(self, url: str) -> EndListener:
        """A session of its own that LISTENs for the ends of watched jobs."""
        conninfo, schema = split_url(url)
        return EndListener(conninfo, schema, pooled=wake_mode(url) == "poll")


DRIVER = PostgresDriver()
