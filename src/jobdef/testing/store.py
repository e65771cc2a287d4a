"""A job store of its own for one test: a temporary file of the default engine, or a
fresh schema beside the store a URL names (see :func:`jobdef.backends.scratch_store`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jobdef.backends import scratch_store
from jobdef.errors import BackendError, UsageError


def fresh_store(db: str | None, folder: Path | None = None) -> tuple[str, Callable[[], None]]:
    """``(url, cleanup)`` of an empty job store beside ``db`` (each engine's driver says
    where); a ``db`` that cannot give one is one line naming ``--jobdef-db``."""
    try:
        return scratch_store(db or None, folder)
    except BackendError as exc:
        raise UsageError(f"--jobdef-db: {exc.message}") from None
