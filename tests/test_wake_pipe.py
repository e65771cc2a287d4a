"""The wake pipe: a wait on it ends at a wake from another thread or a signal handler."""

from __future__ import annotations

import os
import select
import signal
import threading
import time

import pytest

from jobdef.wake_pipe import WakePipe


def _readable(pipe: WakePipe, timeout: float) -> bool:
    ready, _, _ = select.select([pipe.fileno()], [], [], timeout)
    return bool(ready)


def test_a_wake_ends_a_wait_and_a_drain_reads_it_once() -> None:
    pipe = WakePipe()
    try:
        assert not _readable(pipe, 0.0)
        assert pipe.drain() is False
        pipe.wake()
        pipe.wake()
        assert _readable(pipe, 5.0)
        assert pipe.drain() is True
        assert pipe.drain() is False  # both bytes read: the next wait waits
        assert not _readable(pipe, 0.0)
    finally:
        pipe.close()


def test_a_wake_from_another_thread_ends_a_wait_under_way() -> None:
    pipe = WakePipe()
    try:
        fd = pipe.fileno()
        threading.Timer(0.2, pipe.wake).start()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        assert poller.poll(30_000) == [(fd, select.POLLIN)]
    finally:
        pipe.close()


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_a_wake_in_a_signal_handler_ends_the_poll_the_signal_interrupted() -> None:
    """The interrupted poll is retried after the handler ran (PEP 475): it is the
    handler's byte that ends it."""
    pipe = WakePipe()
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: pipe.wake())
    try:
        poller = select.poll()
        poller.register(pipe.fileno(), select.POLLIN)
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        began = time.monotonic()
        assert poller.poll(30_000) == [(pipe.fileno(), select.POLLIN)]
        assert time.monotonic() - began < 25
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        pipe.close()


def test_after_close_a_wake_does_nothing_and_a_new_wait_opens_a_new_pipe() -> None:
    pipe = WakePipe()
    pipe.fileno()
    pipe.close()
    pipe.wake()  # no pipe is opened for it, nothing is written anywhere
    assert pipe.drain() is False
    try:
        assert not _readable(pipe, 0.0)  # a new pipe, empty
        pipe.wake()
        assert _readable(pipe, 5.0)
    finally:
        pipe.close()


def test_a_forked_child_wakes_its_own_pipe_not_its_parents() -> None:
    pipe = WakePipe()
    try:
        parents = pipe.fileno()
        pid = os.fork()
        if pid == 0:  # the child: its pipe is a new one
            code = 0 if pipe.fileno() != parents else 1
            pipe.wake()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert not _readable(pipe, 0.2)  # the child's wake stayed in the child
    finally:
        pipe.close()


def test_a_flood_of_wakes_never_blocks_and_one_drain_empties_the_pipe() -> None:
    """More wakes than the pipe holds (a signal storm): the writes past its capacity are
    dropped, not waited for, and the waiter sees one wake-up."""
    pipe = WakePipe()
    try:
        for _ in range(200_000):  # 200 KB against a pipe of 64 KiB
            pipe.wake()
        assert _readable(pipe, 0.0)
        assert pipe.drain() is True
        assert not _readable(pipe, 0.0)
        assert pipe.drain() is False
    finally:
        pipe.close()
