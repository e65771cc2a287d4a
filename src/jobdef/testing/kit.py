"""Opening a test queue: the project's sheets and a store of its own (see the package)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from jobdef.policy.registry import Registry
from jobdef.project import load_config, use_pythonpath
from jobdef.testing.queue import VirtualQueue
from jobdef.testing.store import fresh_store


def load_project_registry(
    sheets: str | Path | Sequence[str | Path] | None = None, *, start: Path | None = None
) -> Registry:
    """The sheets of ``sheets`` (default: the project's, found as the commands find them,
    from ``start`` or the working directory), with the project's pythonpath put first on
    ``sys.path`` so their handlers import."""
    from jobdef.sheets.pipeline import load_registry

    base = (start or Path.cwd()).resolve()
    config = load_config(start=base)
    use_pythonpath(config)
    if sheets is None:
        folders: list[str | Path] = [base / config.sheets]  # an absolute one stays itself
    elif isinstance(sheets, str | Path):
        folders = [sheets]
    else:
        folders = list(sheets)
    return load_registry(folders)


def open_queue(
    sheets: str | Path | Sequence[str | Path] | Registry | None = None,
    *,
    db: str | None = None,
    folder: Path | None = None,
    start: float | datetime | None = None,
    seed: int = 0,
    timeout_scale: float = 1.0,
) -> VirtualQueue:
    """A :class:`VirtualQueue` on a store of its own; close it (or use ``with``) to remove
    the store. ``db``: a ``postgresql://`` URL to test on PostgreSQL (a fresh schema per
    queue); default a SQLite file in ``folder`` (default a new temporary folder)."""
    registry = sheets if isinstance(sheets, Registry) else load_project_registry(sheets)
    url, cleanup = fresh_store(db, folder)
    try:
        return VirtualQueue(
            registry, url, start=start, seed=seed, timeout_scale=timeout_scale, on_close=cleanup
        )
    except BaseException:
        cleanup()
        raise
