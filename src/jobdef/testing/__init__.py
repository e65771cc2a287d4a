"""The testing kit: a real job store on a virtual clock, for the tests of a jobdef project.

With pytest the kit is a plugin (installed with jobdef, loaded through its
``pytest11`` entry point, or with ``-p jobdef.testing``) that gives the
``jobdef_queue`` fixture; it registers that fixture, two options and a marker,
and does nothing in a test that does not ask for the fixture. Other runners call
:func:`open_queue`::

    from jobdef.testing import open_queue

    with open_queue() as queue:            # the project's sheets, a temporary store
        signup(queue, email="a@example.com")
        queue.assert_enqueued("send_welcome_mail", {"email": "a@example.com"})
        queue.drain()

See :class:`~jobdef.testing.queue.VirtualQueue` and docs/testing.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from jobdef.policy.registry import Registry
from jobdef.testing.clock import VirtualClock
from jobdef.testing.project import find_project, use_pythonpath
from jobdef.testing.queue import Attempt, VirtualQueue
from jobdef.testing.store import fresh_store

# Loaded when pytest registers this package as a plugin (the entry point, or -p).
pytest_plugins = ("jobdef.testing.plugin",)

__all__ = ["Attempt", "VirtualClock", "VirtualQueue", "load_project_registry", "open_queue"]


def load_project_registry(
    sheets: str | Path | Sequence[str | Path] | None = None, *, start: Path | None = None
) -> Registry:
    """The sheets of ``sheets`` (default: the project's, found as the commands find them,
    from ``start`` or the working directory), with the project's pythonpath put first on
    ``sys.path`` so their handlers import."""
    from jobdef.sheets.pipeline import load_registry

    project = find_project(start)
    use_pythonpath(project.pythonpath)
    if sheets is None:
        folders: list[str | Path] = [project.sheets]
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
