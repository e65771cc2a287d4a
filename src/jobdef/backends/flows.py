"""Flows: a workflow's steps stored as jobs, settled in the transaction that ends one.

A started flow is one row of ``jobdef_flows`` (its args, and its ``graph``: each
step's job, parents with their edge policies and args sources, as the sheet said
when the flow started) and one job per step, naming the flow (``flow_id``) and the
step (``step``). Roots are ``queued``; every other step is ``waiting``, a state no
claim reads.

When a step ends (done, dead, cancelled; a retry is not an end, and a reclaimed
attempt is still the same step), the transaction that writes its end also
*settles* its flow: it locks the flow's row (PostgreSQL: ``FOR UPDATE``, so two
parents ending at once are settled one after the other, the second seeing the
first's end), reads the flow's steps, and for each waiting step whose parents
have all ended either queues it, with its args read from the flow's args and its
parents' stored results, or cancels it with a note naming why. A cancelled step
is an end too, so its own children are settled in the same pass. The ``finally``
step is queued once every other step has ended. When every step has ended, the
flow's row ends (``done`` when every step but ``finally`` is done, else
``failed``; ``cancelled`` when it was cancelled) and its end's message goes to
the outbox, in the same transaction again.

There is therefore no moment between a parent's commit and its child's release:
they are one commit. A step whose end did not settle its flow (its row deleted
under it, a lease built without its flow) is found by :func:`sweep`, which the
maintenance service runs: it settles every running flow that has no step left
that could end and settle it.

Everything here runs named queries (``flow_*``) that both engines' ``queries.sql``
define with the same names and parameters, through a :class:`FlowTx` an engine
makes on its open transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from jobdef.backends.cancels import Run, end_running_attempts
from jobdef.backends.records import Notification, Receipt
from jobdef.backends.rows import dump_json, receipt_token
from jobdef.records import Record, record

# Above every flow id (a signed 64-bit integer): list_flows from the newest.
NO_FLOW_CURSOR = 2**63 - 1
# A step in one of these has ended; ``missing`` is a parent whose row is gone.
ENDED = frozenset({"done", "dead", "resolved", "cancelled", "missing"})
# A step in one of these may still end, and its end settles the flow.
ACTIVE = frozenset({"queued", "running"})


@dataclass
class FlowTx:
    """One open transaction of an engine, as the flow code uses it.

    ``run(name, params)`` runs the named query on the transaction's connection and
    returns its rows (read by column name); ``decode`` reads a JSON column; ``now``
    is the engine's clock at the transaction's start. Messages added to ``notes``
    are stored in the outbox by the engine before it commits.
    """

    run: Run
    decode: Callable[[Any], Any]
    now: float
    notes: list[Notification] = field(default_factory=list)


@record
class NewStep(Record):
    """One step of a flow to store: its job's row, and its args when it is queued at
    once (a root); ``args`` None holds it ``waiting``."""

    step: str
    job: str
    queue: str
    priority: int
    max_attempts: int
    args: Mapping[str, Any] | None
    # The job's idempotency key for these args (a waiting step's is filled in when it
    # is released, from the recipe in the flow's graph).
    idempotency_key: str | None = None


@record
class NewFlow(Record):
    """A flow to store: what :func:`start` writes in one transaction."""

    name: str
    args: Mapping[str, Any]
    graph: Mapping[str, Any]
    steps: Sequence[NewStep]
    idempotency_key: str | None = None
    dedupe_window: float | None = None
    deadline: float | None = None  # seconds from the start


@record
class FlowRecord(Record):
    """One row of the flows table, with its steps' states by step name."""

    id: int
    name: str
    receipt: str
    state: str
    args: Mapping[str, Any]
    created_at: float
    finished_at: float | None
    deadline: float | None
    note: str | None
    steps: Mapping[str, str]  # step name -> state ("missing": its row is gone)
    step_ids: Mapping[str, int] = field(default_factory=dict)
    # The graph the flow was started with (see jobdef.runtime.flows.flow_graph).
    graph: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.state != "running"


# -- start --------------------------------------------------------------------------


def start(tx: FlowTx, flow: NewFlow) -> Receipt:
    """Store ``flow`` and its steps, or return the receipt of the flow it duplicates
    (a running flow with the same name and key, or one done within its window)."""
    if flow.idempotency_key is not None:
        key = {"name": flow.name, "key": flow.idempotency_key}
        tx.run("flow_lock_key", {"lock": _lock_number(flow.name, flow.idempotency_key)})
        since = None if flow.dedupe_window is None else tx.now - flow.dedupe_window
        found = tx.run("flow_find_duplicate", key | {"since": since})
        if found:
            return Receipt(found[0]["id"], found[0]["receipt"], created=False)
    token = receipt_token()
    params = {
        "name": flow.name,
        "receipt": token,
        "key": flow.idempotency_key,
        "args": dump_json(flow.args),
        "graph": dump_json(flow.graph),
        "deadline": None if flow.deadline is None else tx.now + flow.deadline,
        "now": tx.now,
    }
    flow_id = int(tx.run("flow_insert", params)[0]["id"])
    steps = [
        {
            "step": s.step,
            "job": s.job,
            "queue": s.queue,
            "priority": s.priority,
            "max_attempts": s.max_attempts,
            "args": {} if s.args is None else dict(s.args),
            "state": "waiting" if s.args is None else "queued",
            "receipt": receipt_token(),
            "key": s.idempotency_key,
        }
        for s in flow.steps
    ]
    tx.run("flow_insert_steps", {"flow_id": flow_id, "steps": dump_json(steps), "now": tx.now})
    return Receipt(flow_id, token, created=True)


def _lock_number(name: str, key: str) -> int:
    """A signed 64-bit number for the flow key's lock (PostgreSQL's advisory lock)."""
    digest = hashlib.blake2b(f"{name}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# -- settle -------------------------------------------------------------------------


def settle(tx: FlowTx, flow_ids: Iterable[int]) -> None:
    """Settle each flow of ``flow_ids`` (ascending, so two transactions that lock the
    same flows lock them in one order): release or cancel its waiting steps whose
    parents have all ended, and end the flow when every step has."""
    for flow_id in sorted(set(flow_ids)):
        _settle_one(tx, flow_id)


def _settle_one(tx: FlowTx, flow_id: int) -> None:
    locked = tx.run("flow_lock", {"flow_id": flow_id})
    if not locked or locked[0]["state"] != "running":
        return
    flow = locked[0]
    graph: Mapping[str, Any] = tx.decode(flow["graph"])
    args: Mapping[str, Any] = tx.decode(flow["args"])
    rows = tx.run("flow_steps", {"flow_id": flow_id})
    states = {row["step"]: row["state"] for row in rows}
    ids = {row["step"]: row["id"] for row in rows}
    results = {row["step"]: row["result"] for row in rows if row["state"] == "done"}
    nodes: Mapping[str, Mapping[str, Any]] = graph["steps"]
    view = _View(nodes, states, results, args, tx.decode)
    # A step's end is its worker's clock at the turn that recorded it, and two workers'
    # turns need not commit in the order of their clocks: what is released or cancelled
    # here is dated no sooner than the latest end among the flow's steps, so no step is
    # due (a claim takes it once its run_after has come) before a parent's recorded end.
    ends = [row["finished_at"] for row in rows if row["finished_at"] is not None]
    at = max([tx.now, *ends])
    cancelled_flow = flow["note"]
    changed = True
    while changed:
        changed = False
        for name, node in nodes.items():
            if states.get(name) != "waiting":
                continue
            verdict: tuple[str, Any] | None
            if cancelled_flow is not None:
                verdict = "cancel", f"the flow was cancelled: {cancelled_flow}"
            else:
                verdict = view.verdict(name, node)
            if verdict is None:
                continue
            kind, value = verdict
            params = {"job_id": ids[name], "now": at}
            if kind == "run":
                key = step_key(node.get("key"), value if isinstance(value, Mapping) else {})
                tx.run(
                    "flow_release_step",
                    params | {"args": dump_json(value), "job": node["job"], "key": key},
                )
                states[name] = "queued"
            else:
                tx.run("flow_cancel_step", params | {"note": value})
                states[name] = "cancelled"
                changed = True
    if all(states.get(name, "missing") in ENDED for name in nodes):
        _end_flow(tx, flow, graph, nodes, states, at=at)


@record
class _View(Record):
    """A flow as one settling reads it: its graph, its steps' states and results."""

    nodes: Mapping[str, Mapping[str, Any]]
    states: Mapping[str, str]
    results: Mapping[str, Any]
    args: Mapping[str, Any]
    decode: Callable[[Any], Any]

    def state(self, step: str) -> str:
        return self.states.get(step, "missing")

    def verdict(self, name: str, node: Mapping[str, Any]) -> tuple[str, Any] | None:
        """What becomes of the waiting step ``name`` now: None (it still waits),
        ``("run", args)`` or ``("cancel", reason)``."""
        if node.get("finally"):
            if any(self.state(n) not in ENDED for n in self.nodes if n != name):
                return None
        else:
            after: Mapping[str, str] = node.get("after", {})
            if any(self.state(p) not in ENDED for p in after):
                return None
            for parent, policy in after.items():
                if policy == "cancel" and self.state(parent) != "done":
                    return "cancel", f"parent step {parent} ended {self.state(parent)}"
        resolved: dict[str, Any] = {}
        for arg, source in node.get("args", {}).items():
            if "from" not in source:
                resolved[arg] = source.get("value")
                continue
            path: list[str] = list(source["from"])
            found, value = _lookup(path, self.args, self.results, self.decode)
            if not found:
                return "cancel", f"arg {arg}: {'.'.join(path)} has no value"
            resolved[arg] = value
        return "run", resolved


def step_key(recipe: str | None, args: Mapping[str, Any]) -> str | None:
    """A released step's idempotency key: its job's recipe filled in with its args
    (None without a recipe, or when the args lack a name it uses)."""
    if recipe is None:
        return None
    try:
        return recipe.format_map(dict(args))
    except (KeyError, IndexError, ValueError, AttributeError):
        return None


def _lookup(
    path: Sequence[str],
    args: Mapping[str, Any],
    results: Mapping[str, Any],
    decode: Callable[[Any], Any],
) -> tuple[bool, Any]:
    """The value at ``path`` (``args.x...`` or ``steps.s.result...``): (found, value)."""
    if path[0] == "args":
        value: Any = args
        rest = path[1:]
    elif path[0] == "steps" and len(path) >= 3 and path[2] == "result":
        if path[1] not in results:
            return False, None
        value = decode(results[path[1]])
        rest = path[3:]
    else:
        return False, None
    for part in rest:
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _end_flow(
    tx: FlowTx,
    flow: Mapping[str, Any],
    graph: Mapping[str, Any],
    nodes: Mapping[str, Mapping[str, Any]],
    states: Mapping[str, str],
    *,
    at: float,
) -> None:
    """End the flow at ``at`` (no sooner than its steps' ends, see _settle_one)."""
    if flow["note"] is not None:
        state = "cancelled"
    elif all(states.get(n) == "done" for n, node in nodes.items() if not node.get("finally")):
        state = "done"
    else:
        state = "failed"
    tx.run("flow_end", {"flow_id": flow["id"], "state": state, "now": at})
    notify: Mapping[str, Any] | None = graph.get("notify")
    if notify and notify.get("channel") and state in notify.get("events", ()):
        args = tx.decode(flow["args"])
        payload = {
            "event": state,
            "job": flow["name"],
            "flow": flow["name"],
            "flow_id": flow["id"],
            "title": graph.get("title", ""),
            "steps": dict(states),
            "key_args": {k: args.get(k) for k in notify.get("key_args", ()) if k in args},
            "note": flow["note"],
            "at": at,
            # As the jobs' messages write it (jobdef.notify.events.iso_time).
            "at_iso": datetime.fromtimestamp(at, UTC)
            .isoformat(timespec="seconds")
            .replace("+00:00", "Z"),
        }
        tx.notes.append(
            Notification(
                channel=notify["channel"],
                event=state,
                job=flow["name"],
                payload=payload,
                message_id=f"flow:{flow['name']}:{flow['id']}:{state}",
            )
        )


# -- cancel, sweep ---------------------------------------------------------------------


def cancel(tx: FlowTx, flow_id: int, reason: str) -> bool:
    """Cancel a running flow: its waiting, queued and running steps are cancelled with
    ``reason``, a running one's open attempt ended ``cancelled`` (its worker stops the
    handler at its next heartbeat, :mod:`jobdef.backends.cancels`), and the flow ends
    ``cancelled`` in the same transaction. False: no running flow."""
    # The steps first, then the flow's row: a step's end takes them in that order.
    tx.run("flow_cancel_targets", {"flow_id": flow_id})
    locked = tx.run("flow_lock", {"flow_id": flow_id})
    if not locked or locked[0]["state"] != "running":
        return False
    # Read again under the flow's lock: a step that a parent's end released while the
    # first read waited for that parent's row may have been claimed since.
    targets = tx.run("flow_cancel_targets", {"flow_id": flow_id})
    note = f"the flow was cancelled: {reason}"
    tx.run("flow_mark_cancelled", {"flow_id": flow_id, "note": reason})
    tx.run("flow_cancel_steps", {"flow_id": flow_id, "note": note, "now": tx.now})
    end_running_attempts(tx.run, targets, note, tx.now)
    _settle_one(tx, flow_id)
    return True


def sweep(tx: FlowTx, limit: int = 100) -> tuple[int, int]:
    """Settle what no step's end can settle any more; (flows settled, steps cancelled).

    A running flow with no step queued or running has nothing left that would
    settle it, so it is settled here: its waiting steps whose parents are gone or
    ended without settling them are released or cancelled, and the flow ends when
    every step has. A running flow past its deadline is cancelled. A waiting step
    whose flow row is gone is cancelled.
    """
    orphans = len(tx.run("flow_cancel_orphans", {"now": tx.now, "note": "its flow is gone"}))
    late = tx.run("flow_past_deadline", {"now": tx.now, "limit": limit})
    for row in late:
        cancel(tx, row["id"], "its deadline passed")
    stuck = [row["id"] for row in tx.run("flow_stuck", {"limit": limit})]
    settle(tx, stuck)
    return len(stuck) + len(late), orphans


# -- reads --------------------------------------------------------------------------


def flow_record(tx: FlowTx, row: Mapping[str, Any]) -> FlowRecord:
    """A flows row and its steps' states."""
    steps = tx.run("flow_steps", {"flow_id": row["id"]})
    graph = tx.decode(row["graph"])
    states = {name: "missing" for name in graph["steps"]}
    states.update({s["step"]: s["state"] for s in steps})
    return FlowRecord(
        id=row["id"],
        name=row["name"],
        receipt=row["receipt"],
        state=row["state"],
        args=tx.decode(row["args"]),
        created_at=row["created_at"],
        finished_at=row["finished_at"],
        deadline=row["deadline"],
        note=row["note"],
        steps=states,
        step_ids={s["step"]: s["id"] for s in steps},
        graph=graph,
    )


def flows_of(leases: Iterable[Any], accepted: Collection[int] | None = None) -> set[int]:
    """The flows of the leases (those whose job id is in ``accepted``, if given)."""
    return {
        lease.flow_id
        for lease in leases
        if lease.flow_id is not None and (accepted is None or lease.job_id in accepted)
    }
