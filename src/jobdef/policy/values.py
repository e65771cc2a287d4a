"""The plain values of the policy model: the byte bounds of a job's args and result, and
the read-only copies of data (:func:`freeze`) that policies hold.

:mod:`jobdef.policy.model` names them too. They live here so that what reads them
without building a policy (the checks of a sheet as written, which run on every
document) does not create the model's classes: `jobdef validate` of sheets without a
job or a workflow never loads :mod:`jobdef.policy.model`, whose fifteen dataclasses
are most of its start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

EMPTY: Mapping[str, Any] = MappingProxyType({})


_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """Turn dicts and lists (e.g. a JSON Schema) into read-only mappings and tuples."""
    if type(value) in _SCALARS:  # the common case, without the slower ABC check below
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """Undo :func:`freeze`, for libraries (jsonschema, json) that want plain dicts and lists."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


# The default of ``limits.args_bytes``, and the value past which validate warns.
DEFAULT_ARGS_BYTES = 256 * 1024
ARGS_BYTES_WARN = 1024 * 1024


# The default of ``result.max_bytes``, and the most a sheet may allow (JD331 refuses more).
DEFAULT_RESULT_BYTES = 64 * 1024
RESULT_BYTES_MAX = 1024 * 1024
