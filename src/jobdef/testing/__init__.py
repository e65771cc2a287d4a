"""The testing kit: a real job store on a virtual clock, for the tests of a jobdef project.

With pytest the kit is a plugin (:mod:`jobdef.testing.plugin`, installed with
jobdef, loaded through its ``pytest11`` entry point, or with ``-p jobdef.testing``)
that gives the ``jobdef_queue`` fixture. Other runners call :func:`open_queue`::

    from jobdef.testing import open_queue

    with open_queue() as queue:            # the project's sheets, a temporary store
        signup(queue, email="a@example.com")
        queue.assert_enqueued("send_welcome_mail", {"email": "a@example.com"})
        queue.drain()

See :class:`~jobdef.testing.queue.VirtualQueue` and docs/testing.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobdef.testing.attempt import Attempt
    from jobdef.testing.clock import VirtualClock
    from jobdef.testing.kit import load_project_registry, open_queue
    from jobdef.testing.queue import VirtualQueue

# Loaded when pytest registers this package as a plugin (the entry point, or -p).
pytest_plugins = ("jobdef.testing.plugin",)

# The names are imported on first use: pytest loads this package in every run of a
# project that has jobdef installed, and a run that never asks for jobdef_queue should
# not pay for the sheets' loader, the engines or the templates.
_HOMES = {
    "Attempt": "jobdef.testing.attempt",
    "VirtualClock": "jobdef.testing.clock",
    "VirtualQueue": "jobdef.testing.queue",
    "load_project_registry": "jobdef.testing.kit",
    "open_queue": "jobdef.testing.kit",
}

__all__ = ["Attempt", "VirtualClock", "VirtualQueue", "load_project_registry", "open_queue"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'jobdef.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
