"""Deprecated: the names of the former ``jobdef.registry`` module, kept for one release.

Each name still works and warns once per place of use with a
:class:`DeprecationWarning` naming the import to write instead. The names are
looked up on access (module ``__getattr__``), so the warning points at the
caller's ``from jobdef.registry import ...`` line, not at this module.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry
    from jobdef.sheets.build import (
        args_schema,
        build_channel,
        build_job,
        build_queue,
        build_registry,
        field_paths,
    )
    from jobdef.sheets.document import Document
    from jobdef.sheets.pipeline import load_registry

# name -> (module it lives in now, the module to import it from)
_MOVED = {
    "load_registry": ("jobdef.sheets.pipeline", "jobdef"),
    "Registry": ("jobdef.policy.registry", "jobdef.policy.registry"),
    "Document": ("jobdef.sheets.document", "jobdef.sheets.document"),
    "build_registry": ("jobdef.sheets.build", "jobdef.sheets.build"),
    "build_job": ("jobdef.sheets.build", "jobdef.sheets.build"),
    "build_channel": ("jobdef.sheets.build", "jobdef.sheets.build"),
    "build_queue": ("jobdef.sheets.build", "jobdef.sheets.build"),
    "field_paths": ("jobdef.sheets.build", "jobdef.sheets.build"),
    "args_schema": ("jobdef.sheets.build", "jobdef.sheets.build"),
}

__all__ = [
    "Document",
    "Registry",
    "args_schema",
    "build_channel",
    "build_job",
    "build_queue",
    "build_registry",
    "field_paths",
    "load_registry",
]


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module 'jobdef.registry' has no attribute {name!r}")
    home, public = _MOVED[name]
    warnings.warn(
        f"jobdef.registry is deprecated and will be removed in the next release; "
        f"write `from {public} import {name}` instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)
