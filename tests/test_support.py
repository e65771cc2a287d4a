"""The shared test helpers themselves: eventually and ManualClock."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from support import ManualClock, eventually


def test_eventually_returns_the_first_truthy_value() -> None:
    answers = iter([0, None, "", [1]])
    assert eventually(lambda: next(answers), timeout=5) == [1]


def test_eventually_waits_for_another_thread() -> None:
    done = threading.Event()
    threading.Timer(0.1, done.set).start()
    assert eventually(done.is_set, timeout=5, what="the timer") is True


def test_eventually_names_what_it_waited_for_when_time_runs_out() -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"timed out after 0.1s waiting for the gate to open"):
        eventually(lambda: False, timeout=0.1, what="the gate to open")
    assert time.monotonic() - started < 5


def test_eventually_without_what_names_the_condition() -> None:
    def never() -> bool:
        return False

    with pytest.raises(AssertionError, match=r"waiting for .*never"):
        eventually(never, timeout=0.05)


def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock(1_700_000_000.0)
    assert clock() == clock() == 1_700_000_000.0
    clock.advance(30)
    assert clock() == 1_700_000_030.0
    clock.set(datetime(2026, 1, 1, tzinfo=UTC))
    assert clock() == 1_767_225_600.0
    clock.set(5)
    assert clock.now == 5.0


def test_manual_clock_starts_at_a_datetime_or_at_the_real_time() -> None:
    assert ManualClock(datetime(2026, 1, 1, tzinfo=UTC))() == 1_767_225_600.0
    before = time.time()
    assert before <= ManualClock()() <= time.time()
