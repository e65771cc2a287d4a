"""A job store of its own for one test: a temporary file of the default engine, or a
fresh schema beside the store a URL names (see :func:`jobdef.backends.scratch_store`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jobdef.backends import scratch_store
from jobdef.errors import BackendError, UsageError


def fresh_store(db: str | None, folder: Path | None = None) -> tuple[str, Callable[[], None]]:
    """``(url, cleanup)`` of an empty job store.

    ``db`` ``None`` or a ``sqlite:`` URL: a new file in ``folder`` (default a new
    temporary folder, removed by ``cleanup``). A ``postgresql://`` URL: the same
    server and database, in a new schema ``jobdef_test_<random>`` that ``cleanup``
    drops (a ``?schema=`` of the URL is replaced: a test never writes to the
    application's own schema).
    """
    try:
        return scratch_store(db or None, folder)
    except BackendError as exc:
        raise UsageError(f"--jobdef-db: {exc.message}") from None
