"""A handler's return value crosses the pipe to the worker, checked, and is never lost.

A real child process runs the batches: a value that is plain JSON arrives as its JSON
text; one that its sheet's ``result:`` refuses (not JSON, too large, breaking the
schema) arrives as a failure of the task (``jobdef.ResultRefused``, one line naming
the job and attempt); one the sheet does not keep (``store: false``) arrives as None;
a value returned just before the child dies arrives all the same, as it is sent
before the child starts its next task.
"""

from __future__ import annotations

import json

from jobdef.policy.values import DEFAULT_RESULT_BYTES
from jobdef.runtime.child import ChildSettings
from jobdef.runtime.pool import Event, Finished, Killed, Pool
from jobdef.runtime.results import ResultRule
from jobdef.runtime.wire import Task
from support import eventually

HANDLERS = [
    "result_handlers:returns",
    "result_handlers:returns_a_set",
    "result_handlers:returns_big",
    "result_handlers:returns_later",
    "result_handlers:dies",
]


RULES = {
    "private": ResultRule(store=False),
    "shaped": ResultRule(
        max_bytes=100,
        schema={
            "type": "object",
            "required": ["total"],
            "properties": {"total": {"type": "integer"}},
        },
        sheet="sheets/shaped.yaml",
    ),
}


def _task(seq: int, handler: str, args: dict, job: str | None = None) -> Task:
    name = job or handler.partition(":")[2]
    return Task(seq, seq, 1, name, handler, args, None, 3, 30.0)


def test_return_values_arrive_checked_and_one_before_a_crash_is_kept(db_url: str) -> None:
    settings = ChildSettings(db_url, handlers=tuple(HANDLERS), results=RULES)
    pool = Pool(1, settings, depth=16)  # one batch: the child runs them all
    value = {"rows": [1, 2], "name": "é", "none": None}
    try:
        pool.wait_ready(60.0, lambda: False)
        tasks = [
            _task(pool.next_seq(), "result_handlers:returns", {"value": value}),
            _task(pool.next_seq(), "result_handlers:returns", {"value": None}),
            _task(pool.next_seq(), "result_handlers:returns_a_set", {}),
            _task(pool.next_seq(), "result_handlers:returns_big", {"size": DEFAULT_RESULT_BYTES}),
            _task(pool.next_seq(), "result_handlers:returns", {"value": {"k": 1}}, "private"),
            _task(pool.next_seq(), "result_handlers:returns", {"value": {"total": 3}}, "shaped"),
            _task(pool.next_seq(), "result_handlers:returns", {"value": {"total": "3"}}, "shaped"),
            _task(pool.next_seq(), "result_handlers:returns", {"value": {"t": "x" * 99}}, "shaped"),
            _task(pool.next_seq(), "result_handlers:returns_later", {"value": [1, "two"]}),
            _task(pool.next_seq(), "result_handlers:returns", {"value": "last words"}),
            _task(pool.next_seq(), "result_handlers:dies", {}),
        ]
        assert pool.dispatch(tasks) == []
        events: list[Event] = []

        def ended() -> bool:
            events.extend(pool.poll(0.05))
            return len(events) == len(tasks)

        eventually(ended, what="every task to end")
    finally:
        pool.close()
    by_seq = {event.task.seq: event for event in events}
    results = []
    for task in tasks[:-1]:
        event = by_seq[task.seq]
        assert isinstance(event, Finished)
        if event.error is not None:
            assert event.error.type == "jobdef.ResultRefused"
            assert event.error_names[0] == "jobdef.ResultRefused"
            assert event.result is None
            results.append(event.error.message)
        else:
            results.append(None if event.result is None else json.loads(event.result))
    seq = [task.seq for task in tasks]
    assert results[:2] == [value, None]
    assert results[2] == (
        f"job {seq[2]} (returns_a_set) attempt 1: return value refused, it is not JSON "
        "(Object of type set is not JSON serializable); return plain JSON (dict, list, str, "
        "number, bool, None), nested at most 32 deep"
    )
    assert results[3] == (
        f"job {seq[3]} (returns_big) attempt 1: return value refused, it is 65538 bytes as "
        "JSON, more than the 65536 allowed by result.max_bytes (64KiB); store the bulk "
        "elsewhere and return its id, or raise result.max_bytes"
    )
    assert results[4:6] == [None, {"total": 3}]  # store: false sends nothing back
    assert results[6] == (
        f"job {seq[6]} (shaped) attempt 1: return value refused, it breaks result.schema of "
        "sheets/shaped.yaml: result.total: '3' is not of type 'integer'; return a value that "
        "matches result.schema, or change the schema"
    )
    assert "more than the 100 allowed by result.max_bytes of sheets/shaped.yaml" in results[7]
    assert results[8:] == [[1, "two"], "last words"]
    assert isinstance(by_seq[tasks[-1].seq], Killed)
