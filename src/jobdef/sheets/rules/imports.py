"""Importing what a sheet names, for --check-imports: never raises, says what went wrong.

Modules are found on ``sys.path`` as it is: the commands put the configured
``pythonpath`` first (:func:`jobdef.cli.config.use_pythonpath`), the same for the
checks as for the worker.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from typing import Any


def resolve(module: str, attribute: str) -> tuple[Any, str | None]:
    """Import ``module`` and get ``attribute``: (object, None) or (None, what went wrong)."""
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        return None, f"module {exc.name or module} not found"
    except Exception as exc:  # importing user code may raise anything
        return None, f"importing {module} raised {type(exc).__name__}: {exc}"
    if not hasattr(loaded, attribute):
        return None, f"module {module} has no attribute {attribute}"
    return getattr(loaded, attribute), None


def handler_kind(handler: Any) -> str:
    """The kind of a handler: "async" for a coroutine function (also behind
    functools.partial, or an object whose ``__call__`` is one), which the worker runs
    on its event loop; else "sync"."""
    call = None if inspect.isroutine(handler) else type(handler).__call__
    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call):
        return "async"
    return "sync"


def handler_kinds(handlers: Iterable[str]) -> list[tuple[str, str]]:
    """(handler, "sync" or "async") for each ``module:function`` that imports and is
    callable, in the order given, once each (the others are findings already)."""
    kinds = []
    for handler in dict.fromkeys(handlers):
        module, _, function = handler.partition(":")
        found, problem = resolve(module, function)
        if problem is None and callable(found):
            kinds.append((handler, handler_kind(found)))
    return kinds
