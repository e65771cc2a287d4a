"""A job store of its own for one test: a temporary SQLite file, or a fresh PostgreSQL schema."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from jobdef.errors import UsageError


def fresh_store(db: str | None, folder: Path | None = None) -> tuple[str, Callable[[], None]]:
    """``(url, cleanup)`` of an empty job store.

    ``db`` ``None`` or a ``sqlite:`` URL: a new file in ``folder`` (default a new
    temporary folder, removed by ``cleanup``). A ``postgresql://`` URL: the same
    server and database, in a new schema ``jobdef_test_<random>`` that ``cleanup``
    drops (a ``?schema=`` of the URL is replaced: a test never writes to the
    application's own schema).
    """
    scheme = urlsplit(db).scheme if db else "sqlite"
    if scheme == "sqlite":
        made = folder is None
        where = Path(tempfile.mkdtemp(prefix="jobdef-test-")) if folder is None else folder
        url = f"sqlite:///{where.resolve() / f'jobdef-{uuid.uuid4().hex[:8]}.db'}"

        def remove() -> None:
            if made:
                shutil.rmtree(where, ignore_errors=True)

        return url, remove
    if scheme not in ("postgresql", "postgres"):
        raise UsageError(
            "--jobdef-db takes a sqlite:///path.db or postgresql://user@host/dbname URL"
        )
    assert db is not None
    schema = f"jobdef_test_{uuid.uuid4().hex[:12]}"
    parts = urlsplit(db)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    url = urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))
    conninfo = urlunsplit(parts._replace(query=urlencode(query)))

    def drop() -> None:
        import psycopg

        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    return url, drop
