"""The SQLite engine as the rest of jobdef reaches it: its
:class:`~jobdef.backends.protocol.Driver`. Its stores are polled for changes: no
notification goes between processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobdef.backends.records import StoreSettings
from jobdef.backends.sqlite.engine import (
    MIGRATIONS,
    SQLiteBackend,
    record_processed_key_on,
    sqlite_path,
)
from jobdef.backends.sqlite.reader import SQLiteReader
from jobdef.backends.waiters import Polling
from jobdef.errors import BackendError

# Seconds between two reads of every waited job (one statement for all of them): how
# soon a waiter learns that its job ended, at most.
POLL_SECONDS = 0.05


class SQLiteDriver:
    """Stores that are one SQLite file each: ``sqlite:///path.db``."""

    name = "sqlite"
    migrations = MIGRATIONS

    def open(
        self, url: str, *, clock: Callable[[], float] | None = None, create: bool = True
    ) -> SQLiteBackend:
        return SQLiteBackend(url, clock=clock, create=create)

    def describe(self, url: str) -> str:
        return str(sqlite_path(url)[0])

    def open_reader(self, url: str) -> SQLiteReader:
        return SQLiteReader(url)

    def scratch_store(self, url: str | None, folder: Path | None) -> tuple[str, Callable[[], None]]:
        """A new file in ``folder`` (default a new temporary folder, which the cleanup
        removes); the file ``url`` names is left alone."""
        import shutil  # here: only tests and benches ask for a scratch store
        import tempfile
        import uuid

        made = folder is None
        where = Path(tempfile.mkdtemp(prefix="jobdef-test-")) if folder is None else folder
        new = f"sqlite:///{where.resolve() / f'jobdef-{uuid.uuid4().hex[:8]}.db'}"

        def remove() -> None:
            if made:
                shutil.rmtree(where, ignore_errors=True)

        return new, remove

    def url_from_settings(self, settings: StoreSettings) -> str:
        """The file's absolute path; an in-memory database or a ``file:`` URI is refused."""
        name = settings.name
        if not name or name == ":memory:" or "mode=memory" in name:
            raise BackendError(
                "is an in-memory SQLite database, which a worker process cannot open; give "
                "it a file path as its name"
            )
        if name.startswith("file:"):
            raise BackendError(
                f"names a SQLite URI ({name.partition('?')[0]}); jobdef needs a plain file "
                "path as its name"
            )
        return f"sqlite:///{Path(name).resolve()}"

    def record_processed_key(
        self, connection: Any, key: str, job_id: int, now: float, store_url: str
    ) -> bool:
        return record_processed_key_on(connection, key, job_id, now, store_url)

    def end_signal(self, url: str) -> Polling:
        """Nothing tells: the waiters read every waited job each :data:`POLL_SECONDS`."""
        return Polling(POLL_SECONDS)


DRIVER = SQLiteDriver()
