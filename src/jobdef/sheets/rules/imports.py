"""Importing what a sheet names, for --check-imports: never raises, says what went wrong."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


def resolve(module: str, attribute: str) -> tuple[Any, str | None]:
    """Import ``module`` and get ``attribute``: (object, None) or (None, what went wrong)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the project's own packages, as the worker sees them
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        return None, f"module {exc.name or module} not found"
    except Exception as exc:  # importing user code may raise anything
        return None, f"importing {module} raised {type(exc).__name__}: {exc}"
    if not hasattr(loaded, attribute):
        return None, f"module {module} has no attribute {attribute}"
    return getattr(loaded, attribute), None
