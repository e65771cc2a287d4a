"""Importing what a sheet names, for --check-imports: never raises, says what went wrong.

Modules are found on ``sys.path`` as it is: the commands put the configured
``pythonpath`` first (:func:`jobdef.cli.config.use_pythonpath`), the same for the
checks as for the worker.
"""

from __future__ import annotations

import importlib
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
