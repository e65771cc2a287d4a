"""Flows for the store's tests, written compactly: ``{step: (parents, args)}``.

``parents`` is ``{parent: edge policy}``; ``args`` maps each arg to ``("args", name)``,
``("steps", step, "result", field...)`` or a literal (anything else). A step named
``finally`` is the flow's finally step. Every step runs the job ``j`` on queue ``q``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobdef.backends.flows import NewFlow, NewStep

Spec = Mapping[str, tuple[Mapping[str, str], Mapping[str, Any]]]


def _source(value: Any) -> dict[str, Any]:
    if isinstance(value, tuple) and value and value[0] in ("args", "steps"):
        return {"from": list(value)}
    return {"value": value}


def new_flow(
    spec: Spec,
    args: Mapping[str, Any] | None = None,
    *,
    name: str = "f",
    key: str | None = None,
    window: float | None = None,
    deadline: float | None = None,
    notify: Mapping[str, Any] | None = None,
    max_attempts: int = 1,
) -> NewFlow:
    args = dict(args or {})
    graph = {
        "title": name,
        "steps": {
            step: {
                "job": "j",
                "after": dict(parents),
                "args": {arg: _source(v) for arg, v in step_args.items()},
                "finally": step == "finally",
            }
            for step, (parents, step_args) in spec.items()
        },
        "notify": notify,
    }
    steps = []
    for step, (parents, step_args) in spec.items():
        root = not parents and step != "finally"
        resolved = None
        if root:
            resolved = {
                arg: args[v[1]] if isinstance(v, tuple) and v[:1] == ("args",) else v
                for arg, v in step_args.items()
            }
        steps.append(NewStep(step, "j", "q", 0, max_attempts, resolved))
    return NewFlow(
        name,
        args,
        graph,
        steps,
        idempotency_key=key,
        dedupe_window=window,
        deadline=deadline,
    )
