"""jobdef: job definition sheets that validate, document and run background jobs.

One YAML sheet per job is the single source of truth: the validator checks it,
the docs are generated from it, and the worker loads its retry, timeout,
idempotency, dead-letter, notification and retention policy from it.

The public face::

    from jobdef import load_registry, connect, Worker, WorkerSettings, Context, first_run
    from jobdef import Receipt, ResultRefused

:func:`load_registry` reads a folder of sheets; :func:`connect` opens a queue on
a job store, whose every enqueue returns a :class:`Receipt`; :class:`Worker`
runs the jobs as its :class:`WorkerSettings` say; handlers receive a
:class:`Context` and use :func:`first_run` to make a re-run harmless.

The names are imported on first use, so ``import jobdef`` stays cheap: the CLI,
a worker's child processes and the reporters import this package and should not
pay for YAML, JSON Schema or a database driver they may never use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobdef.backends.records import Receipt
    from jobdef.runtime.context import Context
    from jobdef.runtime.errors import ResultRefused
    from jobdef.runtime.idempotency import first_run
    from jobdef.runtime.queue import connect
    from jobdef.runtime.settings import WorkerSettings
    from jobdef.runtime.worker import Worker
    from jobdef.sheets.pipeline import load_registry

__version__ = "0.1.0.dev0"

_HOMES = {
    "load_registry": "jobdef.sheets.pipeline",
    "connect": "jobdef.runtime.queue",
    "Worker": "jobdef.runtime.worker",
    "WorkerSettings": "jobdef.runtime.settings",
    "Context": "jobdef.runtime.context",
    "first_run": "jobdef.runtime.idempotency",
    "Receipt": "jobdef.backends.records",
    "ResultRefused": "jobdef.runtime.errors",
}

__all__ = [
    "Context",
    "Receipt",
    "ResultRefused",
    "Worker",
    "WorkerSettings",
    "__version__",
    "connect",
    "first_run",
    "load_registry",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'jobdef' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
