"""The change notifier sends once per interval at most, the first change at once, and
what is pending when the engine closes."""

from __future__ import annotations

import threading
import time

from jobdef.backends.postgres.changes import ChangeNotifier
from support import eventually


class Sends:
    def __init__(self) -> None:
        self.at: list[float] = []
        self.lock = threading.Lock()

    def __call__(self) -> None:
        with self.lock:
            self.at.append(time.monotonic())

    def count(self) -> int:
        with self.lock:
            return len(self.at)


def test_the_first_change_is_sent_at_once_and_a_burst_is_gathered() -> None:
    sends = Sends()
    notifier = ChangeNotifier(sends, interval=0.2)
    try:
        notifier.touched()
        eventually(lambda: sends.count() == 1, 5, "the first change to be sent")
        started = time.monotonic()
        for _ in range(1000):
            notifier.touched()
        elapsed = time.monotonic() - started
        eventually(lambda: sends.count() >= 2, 5, "the burst to be sent")
        time.sleep(0.5)
        # One more send for the whole burst, or one per interval while it lasted.
        assert 2 <= sends.count() <= 2 + elapsed / 0.2 + 1
        gaps = [b - a for a, b in zip(sends.at, sends.at[1:], strict=False)]
        assert all(gap >= 0.19 for gap in gaps), gaps
    finally:
        notifier.close()


def test_close_sends_what_is_pending_and_nothing_when_quiet() -> None:
    sends = Sends()
    notifier = ChangeNotifier(sends, interval=60)
    notifier.close()
    assert sends.count() == 0
    notifier.touched()
    eventually(lambda: sends.count() == 1, 5, "the first change to be sent")
    notifier.touched()  # within the interval: pending
    time.sleep(0.1)
    assert sends.count() == 1
    notifier.close()
    assert sends.count() == 2
    # Usable again after close, as the engine is.
    notifier.touched()
    notifier.close()
    assert sends.count() == 3


def test_a_failed_send_is_not_retried() -> None:
    from jobdef.errors import BackendError

    calls: list[int] = []

    def send() -> None:
        calls.append(1)
        raise BackendError("the server is gone")

    notifier = ChangeNotifier(send, interval=0.05)
    notifier.touched()
    eventually(lambda: len(calls) == 1, 5, "the send to be tried")
    time.sleep(0.2)
    notifier.close()
    assert len(calls) == 1
