"""The flows pages: the newest flows, and one flow's steps beside its plan.

A flow's page draws its graph on the server (no script, nothing from elsewhere:
the dashboard's CSP allows neither): its steps in the order the flow settles them,
grouped by depth (a step's depth is one more than its deepest parent's; ``finally``
comes last). Each step shows its job's state, with the note a cancelled step was
given, and its end beside the latest end of the flow's worst-case timeline
(:func:`jobdef.policy.flow_timeline.flow_timeline`, the bound ``jobdef explain``
prints for the workflow), flagged when it ended, or still runs, later than that
by more than :data:`~jobdef.dashboard.plan.LATE_GRACE`.

The plan is read from the sheet as it is now, the graph from the flow's row (as
the sheet was when the flow started): a step the sheet no longer has is shown
without a plan. Every read is bounded: the list reads :data:`PAGE_SIZE` flows,
a flow's page one job per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobdef.backends.flows import NO_FLOW_CURSOR, FlowRecord
from jobdef.dashboard.plan import LATE_GRACE
from jobdef.dashboard.store import Store
from jobdef.dashboard.views import MAX_ID, age, parse_id, when
from jobdef.errors import UsageError
from jobdef.policy.flow_timeline import FlowTimeline, flow_timeline
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.policy.registry import Registry

FLOW_STATES = ("running", "done", "failed", "cancelled")
# Flows listed on one page, newest first.
PAGE_SIZE = 50
# Flow ids a filtered page searches, below its cursor: the flows table has no index
# on an ended state, so a filter walks the primary key, at most this far.
WINDOW = 20_000


def flows(store: Store, registry: Registry, params: Mapping[str, str]) -> dict[str, Any]:
    """The newest :data:`PAGE_SIZE` flows, of one state and one workflow if asked."""
    state = params.get("state") or None
    if state is not None and state not in FLOW_STATES:
        raise UsageError(f"state: a flow is {', '.join(FLOW_STATES)}; not {state[:40]!r}")
    # Any name: the store keeps the flows of a workflow its sheets no longer define.
    name = (params.get("workflow") or "")[:200] or None
    before = NO_FLOW_CURSOR
    if params.get("before"):
        cursor = parse_id(params["before"])
        if cursor is None:
            raise UsageError("before: a flow id, a whole number from 1 to 2^63 - 1 (0-9)")
        before = cursor
    newest = store.call(store.verbs.list_flows, limit=1, before=before)
    records: list[FlowRecord] = []
    floor = 0
    if newest:
        floor = max(1, newest[0].id - WINDOW + 1) if state or name else 0
        records = store.call(
            store.verbs.list_flows,
            state=state,
            name=name,
            limit=PAGE_SIZE,
            before=before,
            floor=floor,
        )
    # Older flows: below the last one listed when the page filled, else below the window.
    older = records[-1].id if len(records) >= PAGE_SIZE else (floor if floor > 1 else None)
    now = store.clock()
    return {
        "flows": [_summary(r, now) for r in records],
        "state": state or "",
        "workflow": name or "",
        "states": FLOW_STATES,
        "workflows": sorted(registry.workflows),
        "page_size": PAGE_SIZE,
        "window": WINDOW,
        "searched": None if not (newest and (state or name)) else [floor, newest[0].id],
        "older": older,
    }


def _summary(record: FlowRecord, now: float) -> dict[str, Any]:
    steps = [s for s in record.steps if not _is_finally(record, s)]
    done = sum(record.steps[s] == "done" for s in steps)
    ended = record.finished_at if record.finished_at is not None else now
    return {
        "id": record.id,
        "workflow": record.name,
        "title": str(record.graph.get("title") or ""),
        "state": record.state,
        "started_at": when(record.created_at),
        "ended_at": when(record.finished_at),
        "took": age(max(0.0, ended - record.created_at)),
        "steps_done": done,
        "steps_total": len(steps),
        "note": record.note,
    }


def _is_finally(record: FlowRecord, step: str) -> bool:
    node = record.graph.get("steps", {}).get(step, {})
    return bool(node.get("finally"))


def flow_detail(
    store: Store, registry: Registry, flow_id: int, *, lease: float = DEFAULT_LEASE
) -> dict[str, Any] | None:
    """One flow: its steps by depth, each with its state, its job and its plan."""
    if not 0 < flow_id < MAX_ID:
        return None
    record = store.call(store.verbs.get_flow, flow_id)
    if record is None:
        return None
    sheet = registry.workflows.get(record.name)
    timeline: FlowTimeline | None = None
    if sheet is not None:
        timeline = flow_timeline(sheet, registry.jobs, lease=lease)
    planned = {} if timeline is None else {s.name: s for s in timeline.steps}
    now = store.clock()
    nodes: Mapping[str, Mapping[str, Any]] = record.graph.get("steps", {})
    depths = _depths(nodes)
    order = {n: i for i, n in enumerate(sheet.order() if sheet is not None else ())}
    steps = []
    for name in sorted(nodes, key=lambda n: (depths[n], order.get(n, len(order)), n)):
        node = nodes[name]
        job_id = record.step_ids.get(name)
        job = None if job_id is None else store.call(store.verbs.get, job_id)
        bound = planned.get(name)
        latest_end = None if bound is None else bound.latest_end
        end = None if job is None or job.finished_at is None else job.finished_at
        actual = None if end is None else end - record.created_at
        late = None
        if latest_end is not None:
            if actual is not None and actual > latest_end + LATE_GRACE:
                late = f"ended {age(actual - latest_end)} after its latest planned end"
            elif (
                actual is None
                and job is not None
                and job.state == "running"
                and now - record.created_at > latest_end + LATE_GRACE
            ):
                over = age(now - record.created_at - latest_end)
                late = f"still running {over} after its latest planned end"
        steps.append(
            {
                "name": name,
                "job": str(node.get("job", "")),
                "after": sorted(node.get("after", {})),
                "finally": bool(node.get("finally")),
                "depth": depths[name],
                "state": record.steps.get(name, "missing"),
                "job_id": job_id,
                "note": None if job is None else job.note,
                "latest_end": latest_end,
                "actual_end": actual,
                "ended_at": when(end),
                "critical": bool(bound and bound.on_critical_path),
                "late": late,
            }
        )
    levels = [
        {"depth": depth, "steps": [s for s in steps if s["depth"] == depth]}
        for depth in sorted({s["depth"] for s in steps})
    ]
    return {
        "flow": _summary(record, now),
        "receipt": record.receipt[:8] + "…" if record.receipt else "",
        "deadline": None if record.deadline is None else when(record.deadline),
        "levels": levels,
        "steps": steps,
        "planned": timeline is not None,
        "worst_case": None if timeline is None else timeline.worst_case,
        "critical_path": [] if timeline is None else list(timeline.critical_path),
        "late": [f"{s['name']}: {s['late']}" for s in steps if s["late"]],
        "can_cancel": record.state == "running",
    }


def _depths(nodes: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Each step's depth: 0 without parents, else one more than its deepest parent's;
    ``finally`` one more than every other step's. The stored graph's key order is not
    the flow's (PostgreSQL's jsonb sorts keys), so parents are followed, not assumed
    first; a parent on a cycle (validation refuses one) counts as depth 0."""
    depths: dict[str, int] = {}

    def depth(name: str, seen: frozenset[str]) -> int:
        if name not in depths:
            after = nodes.get(name, {}).get("after", {})
            parents = [depth(p, seen | {name}) for p in after if p in nodes and p not in seen]
            depths[name] = 1 + max(parents) if parents else 0
        return depths[name]

    for name, node in nodes.items():
        if not node.get("finally"):
            depth(name, frozenset())
    last = 1 + max(depths.values(), default=-1)
    for name, node in nodes.items():
        if node.get("finally"):
            depths[name] = last
    return depths
