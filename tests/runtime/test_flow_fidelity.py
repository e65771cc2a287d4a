"""Flows with real worker processes, on both engines: every step's end settles its
children in its own transaction, whatever happens to the workers.

Each flow here runs the job ``flow_step``, whose handler first commits a row to a
ledger outside the job database (``flow_handlers``). After each run the flow must
hold these, read from the store and the ledger:

- every step ran at most as often as its sheet allows (``max_attempts``);
- no step started before each of its parents ended (its attempts' starts are after
  the parents' ends, on the store's clock);
- every fan-in ran exactly once or was cancelled with a note naming why;
- a cancelled step never ran, or ran once: the attempt a cancel ended while it
  ran, recorded ``cancelled``;
- nothing is left waiting, queued or running, and the flow row has ended;
- each step ended by its latest end on the flow's worst-case timeline (``jobdef
  explain FLOW``'s, at the workers' lease).

Workers are killed with SIGKILL at random moments of a fan-out of 50; a short
lease has the survivors reclaim what the dead ones held. The moment between a
parent's commit and its child's release does not exist: a test kills the worker
right after the commit of a parent and finds the child already queued, because the
release is in that commit (tests/backends/test_flows.py shows a failing release
taking the parent's end back with it).
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import ledger_handlers
import pytest
from runtime_workers import Workers

from jobdef.backends.protocol import Backend
from jobdef.policy.flow_timeline import flow_timeline
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.stores import engine_db_url
from support.workers import process_alive

pytestmark = pytest.mark.slow

JOBS = """\
apiVersion: jobdef/v1
kind: Job
name: flow_step
handler: flow_handlers:flow_step
max_attempts: 2
backoff: {strategy: fixed, initial: 0s, jitter: none}
timeout: 30s
errors: {default: retry}
retention: {done: 1h, dead: until_resolved}
args:
  ledger: {type: string}
  step: {type: string}
  fail: {type: boolean, required: false}
  seconds: {type: number, required: false}
  v: {type: integer, required: false}
  marks: {type: string, required: false}
result:
  schema:
    type: object
    properties:
      v: {type: integer}
"""


def _step(name: str, after: Mapping[str, str] | None = None, **args: Any) -> str:
    lines = [f"  {name}:", "    job: flow_step"]
    if after:
        edges = ", ".join(f"{parent}: {policy}" for parent, policy in after.items())
        lines.append(f"    after: {{{edges}}}")
    lines.append("    args:")
    lines.append("      ledger: {from: args.ledger}")
    lines.append(f"      step: {{value: {name}}}")
    for arg, value in args.items():
        lines.append(f"      {arg}: {value}")
    return "\n".join(lines)


def _flow(name: str, steps: list[str], final: str | None = None) -> str:
    head = [
        "---",
        "apiVersion: jobdef/v1",
        "kind: Workflow",
        f"name: {name}",
        "args:",
        "  ledger: {type: string}",
        "  fail: {type: boolean}",
        "steps:",
    ]
    text = "\n".join([*head, *steps])
    if final is not None:
        text += "\nfinally:\n  job: flow_step\n  args:\n    ledger: {from: args.ledger}\n"
        text += f"    step: {{value: {final}}}"
    return text + "\n"


FAN = 50
FLOWS = "".join(
    [
        _flow(
            "fan",
            [
                _step("head", seconds=0.05),
                *(_step(f"leaf{i}", {"head": "cancel"}, seconds=0.05) for i in range(FAN)),
                _step(
                    "tail",
                    {f"leaf{i}": "cancel" for i in range(FAN)},
                    v="{from: steps.leaf7.result.v}",
                ),
            ],
        ),
        _flow(
            "diamond",
            [
                _step("a"),
                _step("b", {"a": "cancel"}, v="{from: steps.a.result.v}"),
                _step("c", {"a": "cancel"}),
                _step("d", {"b": "cancel", "c": "cancel"}, v="{from: steps.b.result.v}"),
            ],
        ),
        *(
            _flow(
                f"parent_fails_{policy}",
                [
                    _step("parent", fail="{from: args.fail}"),
                    _step("other"),
                    _step("child", {"parent": policy, "other": "cancel"}),
                ],
            )
            for policy in ("cancel", "run", "ignore")
        ),
        _flow(
            "with_finally",
            [
                _step("a"),
                _step("b", {"a": "cancel"}, fail="{from: args.fail}"),
                _step("c", {"b": "cancel"}),
            ],
            final="finally",
        ),
        _flow(
            "slow_parent",
            [_step("parent", seconds=2.0), _step("child", {"parent": "cancel"}, seconds=30.0)],
        ),
        _flow(
            "cancelled_while_running",
            [
                _step("slow", seconds=25.0, marks="{from: args.marks}"),
                _step("quick", marks="{from: args.marks}"),
                _step("next", {"slow": "run", "quick": "cancel"}),
            ],
            final="finally",
        ).replace(
            "  fail: {type: boolean}\n", "  fail: {type: boolean}\n  marks: {type: string}\n"
        ),
    ]
)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return engine_db_url(request, tmp_path)


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "jobs.yaml").write_text(JOBS, "utf-8")
    (folder / "flows.yaml").write_text(FLOWS, "utf-8")
    return folder


@pytest.fixture
def registry(sheets: Path) -> Registry:
    return load_registry([sheets])


@pytest.fixture
def workers(db_url: str, tmp_path: Path, sheets: Path) -> Iterator[Workers]:
    started = Workers(db_url, tmp_path, sheets=sheets)
    yield started
    started.stop_all()


def _ended(backend: Backend, flow_id: int) -> bool:
    found = backend.get_flow(flow_id)
    return found is not None and found.ended


def _check_invariants(
    backend: Backend, registry: Registry, ledger: str, flow_id: int, lease: float
) -> dict[str, str]:
    """The invariants of the module's docstring; the steps' states by name."""
    flow = backend.get_flow(flow_id)
    assert flow is not None
    assert flow.ended, flow
    policy = registry.workflow(flow.name)
    runs: dict[int, int] = {}
    for job, _attempt, _pid in ledger_handlers.entries(ledger):
        runs[job] = runs.get(job, 0) + 1
    for name, state in flow.steps.items():
        assert state in ("done", "dead", "cancelled"), (name, state)
        record = backend.get(flow.step_ids[name])
        allowed = registry.job(policy.steps[name].job).max_attempts
        assert runs.get(record.id, 0) <= allowed, (name, runs.get(record.id))
        if state == "cancelled":
            assert record.note, f"{name} was cancelled with no reason"
            # Cancelled before it ran, or while it ran: then its one attempt ended
            # cancelled, and it never ran again.
            attempts = backend.attempts(record.id)
            assert runs.get(record.id, 0) == len(attempts) <= 1, (name, attempts)
            assert all(a.outcome == "cancelled" for a in attempts), (name, attempts)
            continue
        starts = [a.started_at for a in backend.attempts(record.id)]
        parents = list(policy.steps[name].after)
        if policy.steps[name].is_finally:
            parents = [n for n in policy.steps if n != name]
        for parent in parents:
            ended = backend.get(flow.step_ids[parent]).finished_at
            assert ended is not None, (name, parent)
            assert min(starts) >= ended, (name, parent)
    _inside_the_worst_case(backend, registry, flow, lease)
    return dict(flow.steps)


def _inside_the_worst_case(backend: Backend, registry: Registry, flow: Any, lease: float) -> None:
    """Each step ended by its latest end on the flow's worst-case timeline (explain's,
    at the workers' lease), counted from the first attempt's start (the flow was
    stored before the workers were up)."""
    timeline = flow_timeline(registry.workflow(flow.name), registry.jobs, lease=lease)
    starts = [a.started_at for job_id in flow.step_ids.values() for a in backend.attempts(job_id)]
    first = min(starts)
    for name, job_id in flow.step_ids.items():
        ended = backend.get(job_id).finished_at
        if backend.attempts(job_id):
            assert ended - first <= timeline.step(name).latest_end, (name, ended - first)


def test_a_fan_out_of_fifty_and_its_fan_in_with_workers_killed_at_random(
    backend, registry, workers, ledger
):
    queue = Queue(backend, registry)
    receipt = queue.start("fan", {"ledger": ledger, "fail": False})
    rng = random.Random(31)
    running = [workers.start("--concurrency", "4", name=f"w{i}", lease="2s") for i in range(3)]
    deadline = time.monotonic() + 120
    kills = 0
    while not _ended(backend, receipt.id) and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.1, 0.8))
        if kills < 4 and not _ended(backend, receipt.id):
            victim = rng.randrange(len(running))
            running[victim].kill()
            running[victim].wait(10)
            kills += 1
            running[victim] = workers.start(
                "--concurrency", "4", name=f"w{victim}-{kills}", lease="2s"
            )
    eventually(lambda: _ended(backend, receipt.id), timeout=120, what="the fan-in flow to end")
    for process in running:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    steps = _check_invariants(backend, registry, ledger, receipt.id, lease=2.0)
    if steps["tail"] == "done":
        tail = backend.get(backend.get_flow(receipt.id).step_ids["tail"])
        leaf7 = backend.get(backend.get_flow(receipt.id).step_ids["leaf7"])
        assert tail.args["v"] == leaf7.id
    assert kills >= 1


@pytest.mark.parametrize(
    "case",
    [
        ("diamond", False, {"a": "done", "b": "done", "c": "done", "d": "done"}, "done"),
        (
            "parent_fails_cancel",
            True,
            {"parent": "dead", "other": "done", "child": "cancelled"},
            "failed",
        ),
        ("parent_fails_run", True, {"parent": "dead", "other": "done", "child": "done"}, "failed"),
        (
            "parent_fails_ignore",
            True,
            {"parent": "dead", "other": "done", "child": "done"},
            "failed",
        ),
        (
            "with_finally",
            False,
            {"a": "done", "b": "done", "c": "done", "finally": "done"},
            "done",
        ),
        (
            "with_finally",
            True,
            {"a": "done", "b": "dead", "c": "cancelled", "finally": "done"},
            "failed",
        ),
    ],
)
def test_each_shape_and_edge_policy_ends_as_the_sheet_says(
    backend, registry, workers, ledger, case
):
    flow, fail, expected, state = case
    queue = Queue(backend, registry)
    receipt = queue.start(flow, {"ledger": ledger, "fail": fail})
    worker = workers.start("--concurrency", "2", lease="5s")
    eventually(lambda: _ended(backend, receipt.id), timeout=60, what=f"flow {flow} to end")
    worker.send_signal(signal.SIGTERM)
    worker.wait(30)
    assert _check_invariants(backend, registry, ledger, receipt.id, lease=5.0) == expected
    assert backend.get_flow(receipt.id).state == state
    if flow == "diamond":
        ids = backend.get_flow(receipt.id).step_ids
        assert backend.get(ids["d"]).args["v"] == ids["b"]  # b's result is its job id
        assert backend.get(ids["b"]).args["v"] == ids["a"]


def test_a_worker_killed_right_after_a_parent_commits_has_already_released_the_child(
    backend, registry, workers, ledger
):
    """The child is queued by the commit that ended its parent: killing the worker
    the moment that commit is seen leaves no parent done with a child still waiting."""
    queue = Queue(backend, registry)
    receipt = queue.start("slow_parent", {"ledger": ledger, "fail": False})
    ids = backend.get_flow(receipt.id).step_ids
    worker = workers.start("--concurrency", "1", lease="30s")
    seen: dict[str, str] = {}

    def parent_done() -> bool:
        # One read of both rows: the parent's end and the child's state together.
        steps = backend.get_flow(receipt.id).steps
        seen.update(steps)
        return steps["parent"] == "done"

    eventually(parent_done, timeout=60, what="the parent to commit")
    worker.kill()
    worker.wait(10)
    assert seen["child"] in ("queued", "running")  # never "waiting" once parent is done
    assert backend.get(ids["child"]).state in ("queued", "running")


def test_cancelling_a_flow_stops_its_running_step_and_ends_the_flow_at_once(
    backend, registry, workers, ledger, tmp_path
):
    """The running step's attempt ends cancelled in the cancel's transaction, the flow
    ends cancelled in it too, and the worker stops the handler at its next heartbeat:
    the handler never reaches its end, and nothing runs again."""
    marks = tmp_path / "marks"
    marks.mkdir()
    queue = Queue(backend, registry)
    args = {"ledger": ledger, "fail": False, "marks": str(marks)}
    receipt = queue.start("cancelled_while_running", args)
    ids = backend.get_flow(receipt.id).step_ids
    worker = workers.start("--concurrency", "2", lease="3s")
    started = marks / f"{ids['slow']}.started"
    eventually(started.exists, timeout=60, what="the slow step's handler to start")
    eventually((marks / f"{ids['quick']}.finished").exists, what="the quick step")
    eventually(
        lambda: backend.get(ids["quick"]).state == "done", what="the quick step to be recorded"
    )
    pid = int(started.read_text("utf-8"))
    assert queue.cancel_flow(receipt, "the customer left")
    flow = backend.get_flow(receipt.id)
    assert (flow.state, flow.note) == ("cancelled", "the customer left")
    assert flow.steps == {
        "slow": "cancelled",
        "quick": "done",
        "next": "cancelled",
        "finally": "cancelled",
    }
    [attempt] = backend.attempts(ids["slow"])
    assert (attempt.outcome, attempt.attempt) == ("cancelled", 1)
    assert attempt.finished_at is not None
    assert "the customer left" in attempt.error.message
    # A heartbeat every second (lease 3s): the handler is stopped long before its 25 s.
    eventually(
        lambda: not process_alive(pid), timeout=20, what="the cancelled handler to be stopped"
    )
    eventually(lambda: "was cancelled" in workers.log(), timeout=10, what="the worker's line")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert not (marks / f"{ids['slow']}.finished").exists()
    assert [a.outcome for a in backend.attempts(ids["slow"])] == ["cancelled"]
    assert [job for job, _, _ in ledger_handlers.entries(ledger)].count(ids["slow"]) == 1
    _check_invariants(backend, registry, ledger, receipt.id, lease=3.0)
