"""The pipe between the worker and a child: named messages, spoken by a real child process."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from types import FrameType

import pytest

from jobdef.runtime.child import ChildSettings
from jobdef.runtime.pool import _EARLY_REPORT_MIN, Beat, Event, Finished, Pool
from jobdef.runtime.wire import (
    Batch,
    Progress,
    Ready,
    Results,
    Stop,
    Task,
    TaskFailed,
)
from support import eventually
from support.workers import worker_env


def _task(seq: int, handler: str, args: dict) -> Task:
    return Task(seq, seq, 1, handler.partition(":")[2], handler, args, None, 3, 30.0)


@pytest.mark.parametrize(
    "message",
    [
        Batch([_task(1, "rt_handlers:noop", {"n": 1})]),
        Stop(),
        Ready(),
        Progress(1, {"step": 1}),
        Results([1, 3], [TaskFailed(2, "ValueError", "bad", "Traceback", ("ValueError",))]),
    ],
)
def test_every_message_crosses_a_pipe_as_itself(message: object) -> None:
    assert pickle.loads(pickle.dumps(message)) == message
    assert type(pickle.loads(pickle.dumps(message))) is type(message)


def test_a_batch_is_read_without_a_python_call_per_task() -> None:
    """A task is unpickled by tuple.__new__, not by its named tuple's __new__ (a Python
    function): the handler process reads a batch of fifty with at most the Batch's call."""
    tasks = [_task(seq, "rt_handlers:noop", {"n": seq}) for seq in range(1, 51)]
    data = pickle.dumps(Batch(tasks, report_every=32), pickle.HIGHEST_PROTOCOL)
    calls: list[str] = []

    def count(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    sys.setprofile(count)
    try:
        batch = pickle.loads(data)
    finally:
        sys.setprofile(None)
    assert batch == Batch(tasks, report_every=32)
    assert {type(task) for task in batch.tasks} == {Task}
    assert len(calls) <= 1, calls


# A child's loop in a process of its own (it ignores SIGINT and sets logging up), fed
# two batches of 64 no-op tasks through a stand-in for its pipe; the Python functions
# called while it runs the second are counted.
_COUNTED_LOOP = """
import sys, tempfile
from multiprocessing.sharedctypes import RawArray
from jobdef.runtime.child import VOUCHED, ChildSettings, child_main, shared_size
from jobdef.runtime.wire import Batch, Stop, Task

def batch(first):
    return Batch([Task(seq, seq, 1, "noop", "rt_handlers:noop", {"n": seq}, None, 3, 30.0)
                  for seq in range(first, first + 64)], report_every=32)

messages = [batch(1), batch(65)]
calls = []

def count(frame, event, arg):
    if event == "call":
        calls.append(frame.f_code.co_name)

class Pipe:
    def recv(self):
        sys.setprofile(None)
        if not messages:
            return Stop()
        if len(messages) == 1:
            sys.setprofile(count)
        return messages.pop(0)

    def send_bytes(self, data):
        pass

lock = tempfile.NamedTemporaryFile()
shared = RawArray("d", shared_size(1))
shared[VOUCHED] = float("inf")  # as a pool no worker vouches for
child_main(Pipe(), shared, lock.name, ChildSettings("", handlers=("rt_handlers:noop",)))
print(calls.count("noop"), len(calls) / 64)
"""


def test_a_no_op_task_costs_the_child_few_python_calls() -> None:
    """What a child runs per task, as Python calls: 15 (27 before a no-op attempt span
    was shared, a Task unpickled without one, a None result left unchecked)."""
    ran = subprocess.run(
        [sys.executable, "-c", _COUNTED_LOOP],
        capture_output=True,
        text=True,
        check=True,
        env=worker_env(Path(__file__).parent),
    )
    handlers, per_task = ran.stdout.split()
    assert handlers == "64"
    assert float(per_task) <= 15.5


def test_a_child_that_runs_plain_functions_never_imports_asyncio(db_url: str) -> None:
    """Its import is a good part of a child's start; only coroutine handlers need it."""
    pool = Pool(1, ChildSettings(db_url, handlers=("rt_handlers:imported",)))
    task = _task(1, "rt_handlers:imported", {"module": "asyncio"})
    events: list[Event] = []
    try:
        pool.wait_ready(60.0, lambda: False)
        task = task._replace(seq=pool.next_seq())
        assert pool.dispatch([task]) == []

        def finished() -> bool:
            events.extend(pool.poll(0.05))
            return bool(events)

        eventually(finished, what="the task to finish")
    finally:
        pool.close()
    assert events == [Finished(task, result="false")]


def test_a_child_runs_a_batch_and_reports_progress_and_each_outcome(db_url: str) -> None:
    handlers = ["rt_handlers:noop", "rt_handlers:fail", "rt_handlers:progress"]
    pool = Pool(1, ChildSettings(db_url, handlers=tuple(handlers)))
    try:
        pool.wait_ready(60.0, lambda: False)
        assert not pool.starting()
        tasks = [
            _task(pool.next_seq(), "rt_handlers:noop", {"n": 1}),
            _task(pool.next_seq(), "rt_handlers:fail", {"kind": "value"}),
            _task(pool.next_seq(), "rt_handlers:progress", {"steps": 2}),
        ]
        assert pool.dispatch(tasks) == []
        events: list[Event] = []

        def finished() -> bool:
            events.extend(pool.poll(0.05))
            return sum(isinstance(e, Finished) for e in events) == 3

        eventually(finished, what="the three tasks to finish")
    finally:
        pool.close()
    done, failed = (next(e for e in events if e.task == t) for t in tasks[:2])
    assert done == Finished(tasks[0])
    assert isinstance(failed, Finished)
    assert failed.error is not None
    assert (failed.error.type, failed.error.message) == ("ValueError", "value failed on attempt 1")
    assert "Traceback" in failed.error.traceback
    assert failed.error_names[:2] == ("ValueError", "Exception")
    assert [e.progress for e in events if isinstance(e, Beat)] == [
        {"step": 1, "of": 2},
        {"step": 2, "of": 2},
    ]
    assert events[-1] == Finished(tasks[2])


def _quick_then_held(
    db_url: str, gate: Path, depth: int, quick: int
) -> tuple[Pool, list[Task], list[Task]]:
    """A pool of one child given ``quick`` no-op tasks, then two held until ``gate`` exists,
    as one batch."""
    handlers = ("rt_handlers:noop", "queue_handlers:hold")
    pool = Pool(1, ChildSettings(db_url, handlers=handlers), depth=depth)
    pool.wait_ready(60.0, lambda: False)
    fast = [_task(pool.next_seq(), "rt_handlers:noop", {}) for _ in range(quick)]
    held = [_task(pool.next_seq(), "queue_handlers:hold", {"gate": str(gate)}) for _ in range(2)]
    assert pool.dispatch(fast + held) == []
    return pool, fast, held


def _finished(events: list[Event]) -> list[int]:
    return [e.task.seq for e in events if isinstance(e, Finished)]


def test_a_child_reports_each_half_depth_of_a_batch_while_the_rest_runs(
    db_url: str, tmp_path: Path
) -> None:
    """Quick tasks come back while the child still runs the rest of their batch, so the
    worker records them and hands out more before the child runs dry."""
    gate = tmp_path / "gate"
    half = _EARLY_REPORT_MIN
    pool, quick, _ = _quick_then_held(db_url, gate, depth=2 * half, quick=half)
    try:
        events: list[Event] = []

        def quick_finished() -> bool:
            events.extend(pool.poll(0.05))
            return _finished(events) == [t.seq for t in quick]

        eventually(quick_finished, what="the half of the batch that ran to come back")
        gate.touch()

        def all_finished() -> bool:
            events.extend(pool.poll(0.05))
            return len(_finished(events)) == half + 2

        eventually(all_finished, what="the whole batch to finish")
    finally:
        pool.close()
    assert all(e.error is None for e in events if isinstance(e, Finished))


def test_a_small_depth_is_reported_a_batch_at_a_time_not_in_halves(
    db_url: str, tmp_path: Path
) -> None:
    """Each report is a turn of the worker (a transaction): halves of a small batch only
    add turns, so below the minimum a batch comes back when it ends (or when a result
    has waited long enough, which the held tasks here prevent)."""
    gate = tmp_path / "gate"
    pool, _, _ = _quick_then_held(db_url, gate, depth=10, quick=5)
    try:
        events: list[Event] = []
        for _ in range(10):  # half a second: the quick five ran long before its end
            events.extend(pool.poll(0.05))
        assert _finished(events) == []
        gate.touch()

        def all_finished() -> bool:
            events.extend(pool.poll(0.05))
            return len(_finished(events)) == 7

        eventually(all_finished, what="the whole batch to finish")
    finally:
        pool.close()
