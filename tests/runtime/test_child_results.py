"""A handler's return value crosses the pipe to the worker, checked, and is never lost.

A real child process runs the batches: a value that is plain JSON arrives as its JSON
text; one that is not JSON, or too large, arrives as None with one warning, and the
task still finished (it returned); a value returned just before the child dies arrives
all the same, as it is sent before the child starts its next task.
"""

from __future__ import annotations

import json

from jobdef.runtime.child import ChildSettings
from jobdef.runtime.payloads import MAX_RESULT_BYTES
from jobdef.runtime.pool import Event, Finished, Killed, Pool
from jobdef.runtime.wire import Task
from support import eventually

HANDLERS = [
    "result_handlers:returns",
    "result_handlers:returns_a_set",
    "result_handlers:returns_big",
    "result_handlers:returns_later",
    "result_handlers:dies",
]


def _task(seq: int, handler: str, args: dict) -> Task:
    return Task(seq, seq, 1, handler.partition(":")[2], handler, args, None, 3, 30.0)


def test_return_values_arrive_checked_and_one_before_a_crash_is_kept(db_url: str) -> None:
    pool = Pool(
        1, ChildSettings(db_url, handlers=tuple(HANDLERS)), depth=8
    )  # one batch: the child runs them all
    value = {"rows": [1, 2], "name": "é", "none": None}
    try:
        pool.wait_ready(60.0, lambda: False)
        tasks = [
            _task(pool.next_seq(), "result_handlers:returns", {"value": value}),
            _task(pool.next_seq(), "result_handlers:returns", {"value": None}),
            _task(pool.next_seq(), "result_handlers:returns_a_set", {}),
            _task(pool.next_seq(), "result_handlers:returns_big", {"size": MAX_RESULT_BYTES}),
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
        assert event.error is None
        results.append(None if event.result is None else json.loads(event.result))
    assert results == [value, None, None, None, [1, "two"], "last words"]
    assert isinstance(by_seq[tasks[-1].seq], Killed)
