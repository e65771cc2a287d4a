"""Flow pruning, on every engine: an ended flow's row is deleted once none of its
steps' rows remain (each step goes by its own job's retention), so a flow token
keeps answering while any step row exists; a running flow is never pruned."""

from __future__ import annotations

import json

from flow_specs import new_flow

from jobdef.backends.records import ErrorInfo, RetentionRule

PAIR = {"a": ({}, {}), "b": ({"a": "cancel"}, {})}
DONE_AFTER_A_MINUTE = RetentionRule("j", done=60, dead=None)  # dead rows kept


def _finish(backend, worker, dead=()):
    """Run every step of the flows started: done, or dead for the steps in ``dead``."""
    while claimed := worker.claim(100):
        for record in claimed:
            if record.step in dead:
                assert backend.bury(record.lease, ErrorInfo("RuntimeError", "boom"))
            else:
                done = backend.complete([record.lease], results={record.id: json.dumps({})})
                assert done == [True]


def _flow_ids(store):
    return sorted(row[0] for row in store.raw("SELECT id FROM {prefix}flows"))


def test_an_ended_flow_goes_once_its_last_step_row_is_pruned(backend, worker, clock):
    receipt = backend.start_flow(new_flow(PAIR))
    _finish(backend, worker)
    assert backend.get_flow(receipt.id).state == "done"
    assert backend.prune_flows() == 0  # its steps' rows are still there
    assert backend.find_flow(receipt.token) is not None
    clock.advance(3600)
    assert backend.prune([DONE_AFTER_A_MINUTE]) == 2
    assert backend.prune_flows(dry_run=True) == 1
    assert backend.find_flow(receipt.token) is not None  # a dry run deletes nothing
    assert backend.prune_flows() == 1
    assert backend.find_flow(receipt.token) is None
    assert backend.get_flow(receipt.id) is None


def test_a_flow_with_a_step_row_left_is_kept(backend, worker, clock):
    """b is dead and kept until resolved; a is pruned: the failed flow stays, and
    its token still answers, until b's row goes too."""
    receipt = backend.start_flow(new_flow(PAIR))
    _finish(backend, worker, dead={"b"})
    clock.advance(3600)
    assert backend.prune([DONE_AFTER_A_MINUTE]) == 1
    assert backend.prune_flows() == 0
    found = backend.find_flow(receipt.token)
    assert found is not None
    assert found.state == "failed"
    assert found.steps == {"a": "missing", "b": "dead"}
    b = found.step_ids["b"]
    assert backend.resolve(b, "handled")
    clock.advance(3600)
    assert backend.prune([DONE_AFTER_A_MINUTE]) == 1
    assert backend.prune_flows() == 1
    assert backend.find_flow(receipt.token) is None


def test_a_running_flow_is_never_pruned_even_with_no_step_row(backend, store):
    receipt = backend.start_flow(new_flow(PAIR))
    conn = store.connect()
    try:
        store.raw("DELETE FROM {prefix}jobs WHERE flow_id = {p}", receipt.id, connection=conn)
        conn.commit()
    finally:
        conn.close()
    assert backend.prune_flows(dry_run=True) == 0
    assert backend.prune_flows() == 0
    assert backend.get_flow(receipt.id).state == "running"


def test_flows_are_pruned_in_bounded_batches_past_the_ones_kept(
    backend, worker, clock, store, monkeypatch
):
    """Five flows, the first and the fourth with a dead step kept: batches of two
    delete the other three, each batch at most two, the walk passing the kept ones."""
    receipts = []
    for n in range(5):
        receipts.append(backend.start_flow(new_flow(PAIR, key=f"k{n}")))
        _finish(backend, worker, dead={"b"} if n in (0, 3) else ())
    clock.advance(3600)
    backend.prune([DONE_AFTER_A_MINUTE])
    batches = []
    write_all = backend._write_all

    def recorded(statements):
        results = write_all(statements)
        batches.append(len(results[0]))
        return results

    monkeypatch.setattr(backend, "_write_all", recorded)
    assert backend.prune_flows(batch_size=2) == 3
    assert max(batches) <= 2
    assert sum(batches) == 3
    assert _flow_ids(store) == [receipts[0].id, receipts[3].id]
