"""The store thread: one call at a time off the loop's thread, its answer taken later."""

from __future__ import annotations

import select
import threading
from collections.abc import Iterator

import pytest

from jobdef.runtime.store_thread import StoreThread


@pytest.fixture
def store() -> Iterator[StoreThread[object]]:
    thread: StoreThread[object] = StoreThread()
    try:
        yield thread
    finally:
        thread.close()


def _readable(fd: int, timeout: float) -> bool:
    return bool(select.select([fd], [], [], timeout)[0])


def test_a_call_runs_on_another_thread_and_its_answer_is_taken_later(
    store: StoreThread[object],
) -> None:
    release = threading.Event()
    ran_on: list[str] = []

    def call() -> object:
        ran_on.append(threading.current_thread().name)
        release.wait(10)
        return 42

    store.start(call)
    assert store.busy  # the caller goes on while the call waits
    assert not store.done()
    assert not _readable(store.fd, 0.05)
    release.set()
    assert _readable(store.fd, 10)  # the answer wakes a poll on the fd
    assert store.done()
    assert store.take() == 42
    assert ran_on == ["jobdef-store"]
    assert not store.busy
    assert not _readable(store.fd, 0.0)  # taken: the next wait does not end at once


def test_what_the_call_raised_is_raised_by_take(store: StoreThread[object]) -> None:
    def call() -> object:
        raise ValueError("the store failed")

    store.start(call)
    with pytest.raises(ValueError, match="the store failed"):
        store.take()
    store.start(lambda: "next")  # the thread serves the next call
    assert store.take() == "next"


def test_one_call_at_a_time(store: StoreThread[object]) -> None:
    release = threading.Event()
    store.start(lambda: release.wait(10))
    with pytest.raises(RuntimeError, match="already in flight"):
        store.start(lambda: None)
    release.set()
    assert store.take() is True
    with pytest.raises(RuntimeError, match="no store call"):
        store.take()


def test_close_waits_for_the_call_in_flight() -> None:
    store: StoreThread[object] = StoreThread()
    finished = threading.Event()

    def call() -> object:
        finished.wait(0.2)
        finished.set()
        return None

    store.start(call)
    store.close()
    assert finished.is_set()
