"""Connecting to PostgreSQL, and turning what can go wrong into one sentence to act on.

A user who mistypes the URL, names a database that does not exist or lacks a
permission gets a :class:`~jobdef.errors.BackendError` that says what is wrong
and what to change, never a driver traceback. Passwords never appear in
messages.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from jobdef.errors import BackendError

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

DEFAULT_SCHEMA = "public"
APPLICATION_NAME = "jobdef"
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
URL_HINT = "write it as postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]"


def require_psycopg() -> None:
    if psycopg is None:
        raise BackendError(
            "the PostgreSQL backend needs psycopg 3; install it with pip install 'jobdef[postgres]'"
        )


def split_url(url: str, schema: str | None = None) -> tuple[str, str]:
    """The libpq connection string and the schema, taken from ``?schema=`` unless given.

    ``schema`` is ours, not libpq's, so it is removed from the URL before connecting.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise BackendError(f"{redact(url)} is not a PostgreSQL URL; {URL_HINT}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    from_url = [value for key, value in query if key == "schema"]
    rest = [(key, value) for key, value in query if key != "schema"]
    chosen = schema or (from_url[-1] if from_url else None) or DEFAULT_SCHEMA
    check_schema_name(chosen)
    # quote, not urlencode's default quote_plus: libpq reads "+" as a plus sign.
    conninfo = urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
    return conninfo, chosen


def check_schema_name(schema: str) -> None:
    if not _SCHEMA_NAME.match(schema):
        raise BackendError(
            f"schema name {schema!r} is not usable; use letters, digits and underscores, "
            "starting with a letter, at most 48 characters (e.g. ?schema=myapp_jobs)"
        )


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


def describe(conninfo: str) -> str:
    """``user@host:port/dbname`` for messages (no password)."""
    try:
        info = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return redact(conninfo)
    host = info.get("host") or "localhost"
    port = info.get("port") or "5432"
    user = f"{info['user']}@" if info.get("user") else ""
    return f"{user}{host}:{port}/{info.get('dbname') or ''}"


def connect(conninfo: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """An autocommit connection, or a :class:`BackendError` that says what to fix."""
    require_psycopg()
    try:
        if "application_name" not in conninfo_to_dict(conninfo):
            # Lets an operator find jobdef's sessions in pg_stat_activity.
            kwargs.setdefault("application_name", APPLICATION_NAME)
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=10, **kwargs)
    except psycopg.ProgrammingError as exc:
        raise BackendError(
            f"invalid PostgreSQL URL {redact(conninfo)}: {first_line(exc)}; {URL_HINT}"
        ) from None
    except psycopg.OperationalError as exc:
        raise connect_error(conninfo, exc) from None


def connect_error(conninfo: str, exc: Exception) -> BackendError:
    """Explain a failed connection by its cause: host, database, role or password."""
    where = describe(conninfo)
    text = first_line(exc)
    database = re.search(r'database "([^"]+)" does not exist', text)
    if database:
        return BackendError(
            f"PostgreSQL at {where}: database {database.group(1)!r} does not exist; "
            f"create it (createdb {database.group(1)}) or fix the database name in the URL"
        )
    role = re.search(r'role "([^"]+)" does not exist', text)
    if role:
        return BackendError(
            f"PostgreSQL at {where}: role {role.group(1)!r} does not exist; "
            "fix the user name in the URL or create the role"
        )
    if "password authentication failed" in text or "no password supplied" in text:
        return BackendError(
            f"PostgreSQL at {where} refused the login: {text}; "
            "check the user and password in the URL (or PGPASSWORD / ~/.pgpass)"
        )
    if re.search(r"invalid .* value|invalid connection option", text):
        return BackendError(f"invalid PostgreSQL URL {redact(conninfo)}: {text}; {URL_HINT}")
    return BackendError(
        f"cannot connect to PostgreSQL at {where}: {text}; "
        "check the host and port in the database URL and that the server is running"
    )


def query_error(exc: Exception, schema: str, user: str | None) -> BackendError | None:
    """A message for a statement that failed for a reason the user can fix, else None."""
    text = first_line(exc)
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return BackendError(
            f"PostgreSQL role {user or '(current)'} lacks a permission: {text}; grant it "
            f"(e.g. GRANT USAGE, CREATE ON SCHEMA {schema} TO {user or 'the role'}, "
            "GRANT ALL ON ALL TABLES IN SCHEMA ...) or run `jobdef db upgrade` as the owner"
        )
    if isinstance(exc, pg_errors.UndefinedTable | pg_errors.InvalidSchemaName):
        return BackendError(
            f"the jobdef tables are missing in schema {schema!r} ({text}); "
            "run `jobdef db upgrade` with this database URL"
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return BackendError(
            f"the PostgreSQL server is read-only ({text}); point the URL at the primary"
        )
    return None


def is_connection_lost(exc: BaseException, conn: psycopg.Connection[Any] | None) -> bool:
    """True when ``exc`` means the session is gone (server restart, pg_terminate_backend)."""
    if isinstance(exc, pg_errors.AdminShutdown | pg_errors.CrashShutdown):
        return True
    return isinstance(exc, psycopg.OperationalError) and (conn is None or conn.broken)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
