"""What many test folders share: one polling helper and one hand-moved clock.

Tests import them as ``from support import eventually, ManualClock``: pytest's
default (prepend) import mode puts ``tests/`` on ``sys.path`` when it loads
``tests/conftest.py``, and spawned child processes inherit that path.

Larger helpers are modules of their own, imported by name: ``support.workers``
(real ``jobdef worker`` processes, started, waited for and stopped),
``support.stores`` (a fresh job database on each engine), ``support.sockets``
(hostile clients of a port), ``support.served`` (an ASGI app served by
uvicorn), ``support.sheet_repo`` and ``support.external``.
"""

from __future__ import annotations

from support.clock import ManualClock
from support.polling import eventually

__all__ = ["ManualClock", "eventually"]
