"""Flows in the store, on every engine: a start stores the whole flow in one
transaction, and a step's end settles its children in the transaction of that end.

Each test drives the steps by hand (claim, complete, bury), so the order of ends is
the test's; the fidelity suite (tests/runtime/test_flow_fidelity.py) runs the same
with real worker processes.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import random
import threading
import time

import pytest
from flow_specs import new_flow

from jobdef.backends import open_backend
from jobdef.backends.protocol import complete_and_claim
from jobdef.backends.records import ClaimOptions, ErrorInfo, ResultRetention, RetentionRule
from jobdef.notify.message import single_message
from jobdef.notify.render import Renderer

BOOM = ErrorInfo("RuntimeError", "boom")

DIAMOND = {
    "a": ({}, {"n": ("args", "n")}),
    "b": ({"a": "cancel"}, {"v": ("steps", "a", "result", "v")}),
    "c": ({"a": "cancel"}, {"k": 7}),
    "d": ({"b": "cancel", "c": "cancel"}, {"x": ("steps", "b", "result", "v")}),
}


def _steps(backend, flow_id):
    found = backend.get_flow(flow_id)
    assert found is not None
    return found.steps


def _ids(backend, flow_id):
    return backend.get_flow(flow_id).step_ids


def _run(backend, worker, outcome=None, result=None):
    """Claim everything queued and end it: done (with ``result``) unless ``outcome``
    (step -> "dead") says otherwise; the steps claimed, in claim order."""
    outcome = outcome or {}
    claimed = worker.claim(100)
    for record in claimed:
        if outcome.get(record.step) == "dead":
            assert backend.bury(record.lease, BOOM)
        else:
            value = json.dumps((result or {}).get(record.step, {"v": record.id}))
            assert backend.complete([record.lease], results={record.id: value}) == [True]
    return [record.step for record in claimed]


def _drain(backend, worker, outcome=None, result=None):
    order = []
    while batch := _run(backend, worker, outcome, result):
        order.append(sorted(batch))
    return order


def test_a_start_stores_every_step_roots_queued_and_the_others_waiting(backend):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    assert receipt.created
    assert _steps(backend, receipt.id) == {
        "a": "queued",
        "b": "waiting",
        "c": "waiting",
        "d": "waiting",
    }
    a = backend.get(_ids(backend, receipt.id)["a"])
    assert (a.args, a.flow_id, a.step) == ({"n": 3}, receipt.id, "a")
    assert backend.find_flow(receipt.token).id == receipt.id
    assert backend.find_flow("not-a-token") is None


def test_a_waiting_step_is_never_claimed(backend, worker):
    backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    assert [r.step for r in worker.claim(100)] == ["a"]
    assert worker.claim(100) == []


def test_a_second_start_with_the_key_returns_the_running_flow(backend, worker, clock):
    first = backend.start_flow(new_flow(DIAMOND, {"n": 1}, key="k", window=60))
    again = backend.start_flow(new_flow(DIAMOND, {"n": 1}, key="k", window=60))
    assert (again.id, again.token, again.created) == (first.id, first.token, False)
    _drain(backend, worker)
    clock.advance(30)  # done 30 s ago: inside the window
    assert backend.start_flow(new_flow(DIAMOND, {"n": 1}, key="k", window=60)).id == first.id
    clock.advance(31)
    later = backend.start_flow(new_flow(DIAMOND, {"n": 1}, key="k", window=60))
    assert later.created
    assert later.id != first.id


def test_children_get_args_from_the_flow_and_their_parents_results(backend, worker):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    order = _drain(backend, worker, result={"a": {"v": 41}, "b": {"v": 42}})
    assert order == [["a"], ["b", "c"], ["d"]]
    ids = _ids(backend, receipt.id)
    assert backend.get(ids["b"]).args == {"v": 41}
    assert backend.get(ids["c"]).args == {"k": 7}
    assert backend.get(ids["d"]).args == {"x": 42}
    assert backend.get_flow(receipt.id).state == "done"


@pytest.mark.parametrize(
    ("policy", "child", "flow_state"),
    [("cancel", "cancelled", "failed"), ("run", "done", "failed"), ("ignore", "done", "failed")],
)
def test_a_dead_parent_under_each_edge_policy(backend, worker, policy, child, flow_state):
    spec = {"p": ({}, {}), "ok": ({}, {}), "c": ({"p": policy, "ok": "cancel"}, {})}
    receipt = backend.start_flow(new_flow(spec))
    _drain(backend, worker, outcome={"p": "dead"})
    steps = _steps(backend, receipt.id)
    assert steps == {"p": "dead", "ok": "done", "c": child}
    if child == "cancelled":
        note = backend.get(_ids(backend, receipt.id)["c"]).note
        assert note == "parent step p ended dead"
    assert backend.get_flow(receipt.id).state == flow_state


def test_a_cancelled_child_cancels_its_own_children_in_the_same_pass(backend, worker):
    spec = {"a": ({}, {}), "b": ({"a": "cancel"}, {}), "c": ({"b": "cancel"}, {})}
    receipt = backend.start_flow(new_flow(spec))
    _drain(backend, worker, outcome={"a": "dead"})
    assert _steps(backend, receipt.id) == {"a": "dead", "b": "cancelled", "c": "cancelled"}
    assert backend.get(_ids(backend, receipt.id)["c"]).note == "parent step b ended cancelled"
    assert backend.get_flow(receipt.id).state == "failed"


@pytest.mark.parametrize("fail", [False, True])
def test_finally_runs_once_after_every_other_step_ended(backend, worker, fail):
    spec = {**DIAMOND, "finally": ({}, {"n": ("args", "n")})}
    receipt = backend.start_flow(new_flow(spec, {"n": 3}))
    order = _drain(backend, worker, outcome={"b": "dead"} if fail else {})
    assert order[-1] == ["finally"]
    assert sum(batch.count("finally") for batch in order) == 1
    steps = _steps(backend, receipt.id)
    assert steps["finally"] == "done"
    assert backend.get_flow(receipt.id).state == ("failed" if fail else "done")


def test_a_retrying_step_has_not_ended(backend, worker, clock):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}, max_attempts=2))
    [a] = worker.claim(10)
    assert backend.retry(a.lease, BOOM, run_after=clock(), delay=0)
    assert _steps(backend, receipt.id)["b"] == "waiting"
    [again] = worker.claim(10)
    assert (again.id, again.attempt) == (a.id, 2)  # the same step, its second attempt
    assert backend.complete([again.lease], results={again.id: '{"v": 1}'}) == [True]
    assert _steps(backend, receipt.id)["b"] == "queued"


def test_a_reclaimed_step_that_is_buried_settles_its_flow(backend, worker, clock):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    assert len(worker.claim(10)) == 1
    clock.advance(60)  # its lease (30 s) expired: the worker died
    [expired] = backend.expired_leases()
    assert expired.lease.flow_id == receipt.id
    assert backend.bury(expired.lease, BOOM, outcome="reclaimed")
    assert _steps(backend, receipt.id) == {
        "a": "dead",
        "b": "cancelled",
        "c": "cancelled",
        "d": "cancelled",
    }


def test_cancelling_a_queued_step_settles_its_flow(backend):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    assert backend.cancel(_ids(backend, receipt.id)["a"])
    assert set(_steps(backend, receipt.id).values()) == {"cancelled"}
    assert backend.get_flow(receipt.id).state == "failed"


def test_cancelling_a_flow_cancels_its_running_step_too_and_ends_at_once(backend, worker):
    spec = {"a": ({}, {}), "b": ({}, {}), "c": ({"a": "run"}, {}), "finally": ({}, {})}
    receipt = backend.start_flow(new_flow(spec))
    [a] = worker.claim(1)  # a runs; b stays queued
    assert backend.cancel_flow(receipt.id, "customer left")
    steps = _steps(backend, receipt.id)
    assert set(steps.values()) == {"cancelled"}
    note = "the flow was cancelled: customer left"
    assert backend.get(_ids(backend, receipt.id)["c"]).note == note
    assert backend.get_flow(receipt.id).state == "cancelled"
    # The running step's attempt ended with the cancel; its lease no longer holds.
    record = backend.get(a.id)
    assert (record.state, record.note, record.lease_until) == ("cancelled", note, None)
    [attempt] = backend.attempts(a.id)
    assert (attempt.attempt, attempt.worker_id, attempt.outcome) == (1, a.worker_id, "cancelled")
    assert attempt.finished_at is not None
    assert attempt.error.message == f"the attempt was cancelled while it ran: {note}"
    assert not backend.heartbeat(a.lease, 30)
    assert backend.complete([a.lease]) == [False]
    assert not backend.retry(a.lease, BOOM, run_after=0, delay=0)
    assert [x.outcome for x in backend.attempts(a.id)] == ["cancelled"]
    assert not backend.cancel_flow(receipt.id, "again")


def test_the_flow_end_message_goes_to_the_outbox_with_the_end(backend, worker):
    notify = {"channel": "ops", "events": ["failed"], "key_args": ["n"]}
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}, notify=notify))
    _drain(backend, worker, outcome={"c": "dead"})
    [message] = [m.notification for m in backend.outbox_pending()]
    assert (message.channel, message.event, message.job) == ("ops", "failed", "f")
    assert message.payload["flow_id"] == receipt.id
    assert message.payload["key_args"] == {"n": 3}
    assert message.payload["steps"]["d"] == "cancelled"
    text = single_message(message, Renderer()).text
    assert text.startswith(f"[jobdef] flow failed: f (f), flow {receipt.id}\nkey args: n=3\n")
    assert "steps: a done, b done, c dead, d cancelled\n" in text


def test_a_settle_that_fails_rolls_back_the_end_that_caused_it(backend, worker, monkeypatch):
    """The release is in the end's transaction: if settling cannot be written, the
    parent's end is not written either, so no commit leaves a parent done and its
    child unreleased."""
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    [a] = worker.claim(10)

    def broken(tx, flow_ids):
        raise RuntimeError("the disk went away mid-settle")

    for module in ("jobdef.backends.sqlite.engine", "jobdef.backends.postgres.engine"):
        monkeypatch.setattr(f"{module}.flows_settle", broken)
    with pytest.raises(RuntimeError):
        backend.complete([a.lease], results={a.id: '{"v": 1}'})
    assert backend.get(a.id).state == "running"
    assert [x.outcome for x in backend.attempts(a.id)] == [None]  # still running
    monkeypatch.undo()
    assert backend.complete([a.lease], results={a.id: '{"v": 1}'}) == [True]
    assert _steps(backend, receipt.id)["b"] == "queued"


def test_the_sweeper_settles_a_child_whose_parent_row_was_deleted(backend, worker, store):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    ids = _ids(backend, receipt.id)
    _run(backend, worker)  # a done: b and c queued
    _run(backend, worker)  # b and c done: d queued
    [d] = worker.claim(10)
    # The row of b goes under the flow, and d ends without settling (a lease that
    # does not name its flow, as a store written by hand would end it).
    _sql(store, "DELETE FROM {prefix}jobs WHERE id = {p}", ids["b"])
    _sql(store, "UPDATE {prefix}jobs SET state = 'waiting' WHERE id = {p}", d.id)
    assert backend.get_flow(receipt.id).state == "running"
    assert worker.claim(10) == []
    assert backend.sweep_flows() == (1, 0)
    assert _steps(backend, receipt.id) == {
        "a": "done",
        "b": "missing",
        "c": "done",
        "d": "cancelled",
    }
    assert backend.get(d.id).note == "parent step b ended missing"
    assert backend.get_flow(receipt.id).state == "failed"
    assert backend.sweep_flows() == (0, 0)


def test_the_sweeper_cancels_waiting_steps_of_a_flow_that_is_gone(backend, store):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    ids = _ids(backend, receipt.id)
    _sql(store, "DELETE FROM {prefix}flows WHERE id = {p}", receipt.id)
    assert backend.sweep_flows() == (0, 3)
    assert backend.get(ids["d"]).state == "cancelled"
    assert backend.get(ids["d"]).note == "its flow is gone"


def test_the_sweeper_cancels_a_flow_past_its_deadline(backend, worker, clock):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}, deadline=60))
    clock.advance(61)
    assert backend.sweep_flows() == (1, 0)
    assert backend.get_flow(receipt.id).state == "cancelled"
    assert backend.get_flow(receipt.id).note == "its deadline passed"


def test_retention_keeps_the_steps_of_a_running_flow(backend, worker, clock):
    receipt = backend.start_flow(new_flow({"a": ({}, {}), "b": ({"a": "cancel"}, {})}))
    _run(backend, worker)  # a done; b queued, not run yet
    clock.advance(3600)
    rule = RetentionRule("j", done=60, dead=60)
    assert backend.prune([rule]) == 0
    assert _steps(backend, receipt.id)["a"] == "done"
    _run(backend, worker)
    clock.advance(3600)
    assert backend.prune([rule]) == 2


def test_result_retention_keeps_the_results_of_a_running_flows_steps(backend, worker, clock):
    receipt = backend.start_flow(new_flow(DIAMOND, {"n": 3}))
    _run(backend, worker, result={"a": {"v": 41}})  # a done; b and c queued
    clock.advance(3600)
    assert backend.expire_results([ResultRetention("j", keep=60)]) == 0
    _drain(backend, worker)
    assert backend.get(_ids(backend, receipt.id)["b"]).args == {"v": 41}
    clock.advance(3600)
    assert backend.expire_results([ResultRetention("j", keep=60)]) == 4


def test_two_parents_ending_at_once_release_the_fan_in_exactly_once(store, clock):
    """Each parent ends on its own connection, at the same moment: the flow's lock
    makes the second settle read the first's end, so the fan-in is released once."""
    first = open_backend(store.url, clock=clock)
    second = open_backend(store.url, clock=clock)
    try:
        spec = {"a": ({}, {}), "b": ({}, {}), "fan_in": ({"a": "cancel", "b": "cancel"}, {})}
        for _ in range(20):
            receipt = first.start_flow(new_flow(spec))
            a, b = first.claim(ClaimOptions("w", 30, limit=2))
            barrier = threading.Barrier(2)

            def end(backend, record, barrier=barrier):
                barrier.wait()
                backend.complete([record.lease])

            threads = [
                threading.Thread(target=end, args=(first, a)),
                threading.Thread(target=end, args=(second, b)),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert first.get_flow(receipt.id).steps["fan_in"] == "queued"
            [fan_in] = first.claim(ClaimOptions("w", 30, limit=10))
            assert fan_in.step == "fan_in"
            first.complete([fan_in.lease])
            assert first.get_flow(receipt.id).state == "done"
    finally:
        first.close()
        second.close()


def test_a_flow_cancelled_as_its_running_step_ends_settles_once_without_a_deadlock(store, clock):
    """The cancel and the step's end on two connections at the same moment: whichever
    commits first wins. Either the step is done (its child released, then cancelled by
    the flow's cancel) or the cancel ended its attempt and the completion is refused;
    the flow ends cancelled, and the step has one attempt row, which agrees."""
    first = open_backend(store.url, clock=clock)
    second = open_backend(store.url, clock=clock)
    try:
        spec = {"a": ({}, {}), "b": ({"a": "cancel"}, {}), "c": ({"b": "cancel"}, {})}
        rng = random.Random(5)
        won = collections.Counter()
        for _ in range(20):
            receipt = first.start_flow(new_flow(spec))
            [a] = first.claim(ClaimOptions("w", 30, limit=1))
            barrier = threading.Barrier(2)
            answers = {}

            # One side or the other a little late, so either may commit first.
            late = rng.choice(["complete", "cancel"])
            delay = rng.uniform(0, 0.003)

            def complete(a=a, barrier=barrier, answers=answers, late=late, delay=delay):
                barrier.wait()
                time.sleep(delay if late == "complete" else 0)
                answers["complete"] = second.complete([a.lease])

            def cancel(receipt=receipt, barrier=barrier, answers=answers, late=late, delay=delay):
                barrier.wait()
                time.sleep(delay if late == "cancel" else 0)
                answers["cancel"] = first.cancel_flow(receipt.id, "race")

            threads = [threading.Thread(target=complete), threading.Thread(target=cancel)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            flow = first.get_flow(receipt.id)
            assert answers["cancel"] is True
            assert flow.state == "cancelled"
            state = flow.steps["a"]
            assert answers["complete"] == [state == "done"]
            assert [x.outcome for x in first.attempts(a.id)] == [state]
            assert {flow.steps["b"], flow.steps["c"]} == {"cancelled"}
            won[state] += 1
        assert set(won) <= {"done", "cancelled"}
    finally:
        first.close()
        second.close()


def test_the_flow_row_lists_and_counts(backend, worker):
    one = backend.start_flow(new_flow(DIAMOND, {"n": 1}, name="one"))
    backend.start_flow(new_flow(DIAMOND, {"n": 1}, name="two"))
    _drain(backend, worker)
    assert sorted(backend.flow_counts()) == [("one", "done", 1), ("two", "done", 1)]
    assert [f.name for f in backend.list_flows()] == ["two", "one"]
    assert [f.id for f in backend.list_flows(name="one")] == [one.id]


def _sql(store, sql, *params):
    conn = store.connect()
    try:
        store.raw(sql, *params, connection=conn)
        conn.commit()
    finally:
        conn.close()


def test_a_worker_turn_that_ends_a_parent_may_claim_its_child_in_the_same_commit(backend, worker):
    backend.start_flow(new_flow({"a": ({}, {}), "b": ({"a": "cancel"}, {})}))
    [a] = worker.claim(1)
    options = ClaimOptions("w1", 30, limit=5)
    accepted, claimed = complete_and_claim(backend, [a.lease], None, options)
    assert accepted == [True]
    assert [record.step for record in claimed] == ["b"]


def test_a_released_step_carries_its_jobs_idempotency_key(backend, worker):
    flow = new_flow(DIAMOND, {"n": 3})
    graph = {**flow.graph, "steps": {**flow.graph["steps"]}}
    graph["steps"]["b"] = {**graph["steps"]["b"], "key": "b-{v}"}
    receipt = backend.start_flow(dataclasses.replace(flow, graph=graph))
    _run(backend, worker, result={"a": {"v": 41}})
    assert backend.get(_ids(backend, receipt.id)["b"]).idempotency_key == "b-41"
    assert backend.get(_ids(backend, receipt.id)["c"]).idempotency_key is None


def test_the_sweeper_tells_the_worker_when_it_settled_a_flow(backend, clock):
    """A settled flow may have released waiting steps: an idle worker claims at once."""
    from jobdef.policy.registry import Registry
    from jobdef.runtime.maintenance import MaintenanceContext
    from jobdef.runtime.maintenance.flows import FlowSweeper

    told = []
    registry = Registry(jobs={}, channels={})
    ctx = MaintenanceContext(backend, registry, "w", clock, made_runnable=lambda: told.append(1))
    sweeper = FlowSweeper(ctx)
    backend.start_flow(new_flow(DIAMOND, {"n": 3}, deadline=60))
    assert sweeper.tick(clock()) == (0, 0)
    assert told == []
    clock.advance(61)
    assert sweeper.tick(clock()) == (1, 0)
    assert told == [1]


def test_a_fan_in_never_starts_before_a_parents_recorded_end(backend, worker, clock):
    """On PostgreSQL an end is its worker's clock at its turn, and turns need not commit
    in that order: ``b`` ends at +5 s, then ``a`` at +2 s in a turn that commits after
    it. The fan-in is due at the later end, so no claim dated before it takes it.
    (SQLite dates each write by its own clock, in commit order.)"""
    receipt = backend.start_flow(
        new_flow({"a": ({}, {}), "b": ({}, {}), "fan_in": ({"a": "cancel", "b": "cancel"}, {})})
    )
    leases = {record.step: record.lease for record in worker.claim(10)}
    start = clock()

    def turn(lease, at):
        options = ClaimOptions("w1", 30, limit=5, started_at=start + at)
        return complete_and_claim(backend, [lease] if lease else [], None, options)[1]

    claimed = turn(leases["b"], 5.0) + turn(leases["a"], 2.0)
    assert _steps(backend, receipt.id)["fan_in"] in ("queued", "running")
    claimed += turn(None, 4.9) + turn(None, 5.0)
    [fan_in] = claimed
    ids = _ids(backend, receipt.id)
    ends = [backend.get(ids[step]).finished_at for step in ("a", "b")]
    assert fan_in.step == "fan_in"
    assert [a.started_at for a in backend.attempts(fan_in.id)] == [fan_in.started_at]
    assert fan_in.started_at >= max(ends), (fan_in.started_at - start, [e - start for e in ends])
