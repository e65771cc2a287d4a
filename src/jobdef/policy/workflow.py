"""The effective policy of a workflow: several jobs run as one flat graph of steps.

A ``Workflow`` sheet names steps, each running one Job sheet with args mapped from
the flow's own args and from its parents' results, and ``after:`` edges between
them. Each edge says what a parent that ended *not done* (dead, cancelled, or
missing: pruned or deleted) means for the child:

- ``cancel`` (the default): the child is cancelled, with a reason naming the parent;
- ``run``: the child runs anyway, once all its edges are settled;
- ``ignore``: the edge does not count for that outcome (the child still waits for
  the parent to end, and then runs as if the edge were not there).

A child is ready when every parent has ended and no ``cancel`` edge's parent ended
not done; a retrying parent has not ended. The optional ``finally`` step has no
edges: it runs once, when every other step has ended, whatever their outcome.

The graph is flat by design: a step is one job, never a group or a nested flow, so
every step's state, plan and failure policy is one row of one table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jobdef.policy.model import IdempotencyPolicy, Origin
from jobdef.policy.values import EMPTY, freeze

EdgePolicy = Literal["cancel", "run", "ignore"]
EDGE_POLICIES: tuple[EdgePolicy, ...] = ("cancel", "run", "ignore")
DEFAULT_EDGE: EdgePolicy = "cancel"

FlowEvent = Literal["done", "failed", "cancelled"]
FLOW_EVENTS: tuple[FlowEvent, ...] = ("done", "failed", "cancelled")

# The name of the `finally:` step among a flow's steps (no step may be named so).
FINALLY = "finally"


@dataclass(frozen=True, slots=True)
class ArgSource:
    """Where one arg of a step comes from: a literal value, or a path to read.

    ``path`` is ``("args", name, field...)`` (the flow's args) or
    ``("steps", step, "result", field...)`` (a parent's stored result); ``None``
    means ``literal`` is the value (frozen, as written; a mapping literal is
    written ``{value: {...}}`` in the sheet and stored here as the mapping).
    """

    literal: Any = None
    path: tuple[str, ...] | None = None

    @property
    def step(self) -> str | None:
        """The step whose result this reads, or ``None``."""
        if self.path is not None and len(self.path) >= 3 and self.path[0] == "steps":
            return self.path[1]
        return None

    def __str__(self) -> str:
        return "" if self.path is None else ".".join(self.path)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a flow: the job it runs, its args, and the parents it waits for."""

    name: str
    job: str
    args: Mapping[str, ArgSource] = field(default_factory=lambda: EMPTY)
    after: Mapping[str, EdgePolicy] = field(default_factory=lambda: EMPTY)
    is_finally: bool = False


@dataclass(frozen=True, slots=True)
class FlowNotifyPolicy:
    """Who hears about the flow's end: the channel, the events, the args shown."""

    channel: str | None = None
    events: tuple[FlowEvent, ...] = ()
    key_args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkflowPolicy:
    """The resolved policy of one ``Workflow`` sheet.

    ``args`` is the JSON Schema of the flow's args object, as a Job's
    ``args_schema`` (built by the same function). ``steps`` holds every step by
    name, the ``finally`` step included (``is_finally``, named ``finally``).
    ``origins`` maps a dotted path of the sheet (``steps.charge.job``) to where it
    was written.
    """

    name: str
    title: str = ""
    description: str = ""
    owner: str = ""
    args: Mapping[str, Any] = field(default_factory=lambda: freeze({"type": "object"}))
    idempotency: IdempotencyPolicy | None = None
    deadline: float | None = None
    notify: FlowNotifyPolicy | None = None
    steps: Mapping[str, Step] = field(default_factory=lambda: EMPTY)
    origins: Mapping[str, Origin] = field(default_factory=lambda: EMPTY)
    file: str = ""

    @property
    def finally_step(self) -> Step | None:
        return next((s for s in self.steps.values() if s.is_finally), None)

    def children(self, step: str) -> tuple[str, ...]:
        """The steps with an edge from ``step``, in sheet order (``finally`` not included)."""
        return tuple(s.name for s in self.steps.values() if step in s.after)

    def roots(self) -> tuple[str, ...]:
        """The steps that wait for nothing (``finally`` not included), in sheet order."""
        return tuple(s.name for s in self.steps.values() if not s.after and not s.is_finally)

    def order(self) -> tuple[str, ...]:
        """A topological order: every step after its parents, ties in sheet order,
        ``finally`` last. Steps on a cycle (which validation refuses) come last."""
        placed: list[str] = []
        done: set[str] = set()
        pending = [s for s in self.steps.values() if not s.is_finally]
        while pending:
            ready = [s for s in pending if all(p in done for p in s.after if p in self.steps)]
            if not ready:  # a cycle: keep sheet order for what is left
                ready = pending
            for step in ready:
                placed.append(step.name)
                done.add(step.name)
            pending = [s for s in pending if s.name not in done]
        last = self.finally_step
        return (*placed, last.name) if last is not None else tuple(placed)

    def ancestors(self, step: str) -> frozenset[str]:
        """Every step ``step`` waits for, directly or through others (every step but
        itself for ``finally``)."""
        node = self.steps.get(step)
        if node is not None and node.is_finally:
            return frozenset(self.steps) - {step}
        seen: set[str] = set()
        stack = list(node.after) if node is not None else []
        while stack:
            parent = stack.pop()
            if parent in seen or parent not in self.steps:
                continue
            seen.add(parent)
            stack.extend(self.steps[parent].after)
        return frozenset(seen)

    def origin(self, path: str) -> Origin | None:
        """Where the value at ``path`` was written, looking at parents when not itself."""
        while path:
            if path in self.origins:
                return self.origins[path]
            path = path.rpartition(".")[0]
        return None
