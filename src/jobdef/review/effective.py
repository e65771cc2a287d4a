"""One job's effective policy as a flat table of dotted field paths and plain values.

The diff compares these tables. The fields and their order come from
:data:`jobdef.policy.fields.JOB_FIELDS`, the list the docs read too. Durations
stay float seconds; lists become lists, mappings dicts, so the table is
JSON-ready.
"""

from __future__ import annotations

from typing import Any

from jobdef.policy.fields import JOB_FIELDS, policy_value
from jobdef.policy.model import JobPolicy, Origin
from jobdef.policy.values import thaw


def _args(job: JobPolicy) -> dict[str, Any]:
    """``args.<name>`` -> the arg's schema as the sheet writes it (``required: false`` kept)."""
    schema = thaw(job.args_schema)
    required = set(schema.get("required", ()))
    out: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        entry = dict(prop)
        if name not in required:
            entry["required"] = False
        out[f"args.{name}"] = entry
    return out


def effective_values(job: JobPolicy) -> dict[str, Any]:
    """Every reviewable value of ``job`` by dotted path, in sheet order.

    ``name`` is left out (a changed name is a rename), and so are the decision
    answers of a job without a ``decision`` block.
    """
    values: dict[str, Any] = {}
    for field in JOB_FIELDS:
        if field.path == "name" or (field.kind == "answer" and job.decision is None):
            continue
        if field.kind == "args":
            values.update(_args(job))
            continue
        value = policy_value(job, field.path)
        if field.kind == "errors":
            value = [c.name for c in value]
        elif field.kind == "schema" or isinstance(value, tuple):
            value = thaw(value)
        values[field.path] = value
    return values


def value_origin(job: JobPolicy, path: str) -> Origin | None:
    """Where the value at ``path`` was written, or ``None`` for a built-in default."""
    origin = job.origin(path)
    if origin is None or origin.source == "builtin":
        return None
    return origin
