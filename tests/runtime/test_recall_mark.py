"""The worker takes back what a handler process holds and has not started by raising a
mark in their shared block (``RECALL``): the process never starts a task numbered at or
below it. The mark only rises. A process's finished tasks stay the worker's to account
for until their results are read, so a recall may find nothing above what the process
started; lowering the mark to that let the process start the tasks an earlier recall had
taken back, and which the worker had handed to another process: one attempt run twice.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from types import SimpleNamespace

from jobdef.runtime.child import RECALL, SLOTS, STARTED
from jobdef.runtime.pool import _Child
from jobdef.runtime.wire import Task


def _task(seq: int) -> Task:
    return Task(seq, seq, 1, "noop", "rt_handlers:noop", {}, None, 1, 60.0)


def test_a_recall_that_finds_nothing_waiting_keeps_the_mark_of_the_one_before() -> None:
    shared = [0.0] * SLOTS
    child = SimpleNamespace(
        tasks=OrderedDict((seq, _task(seq)) for seq in range(1, 11)),
        lock=contextlib.nullcontext(),
        shared=shared,
    )
    shared[STARTED] = 4  # 1 to 3 finished (their results not read yet), 4 runs, 5 to 10 wait
    taken = _Child.recall_waiting(child)  # type: ignore[arg-type]
    assert [task.seq for task in taken] == list(range(5, 11))
    assert shared[RECALL] == 10
    # Their results still not read: the next recall finds nothing above 4 to take.
    assert _Child.recall_waiting(child) == []  # type: ignore[arg-type]
    assert shared[RECALL] == 10  # not 4: 5 to 10, handed out again elsewhere, never start here
