"""A clock that moves only when the test moves it, for stores, workers and services."""

from __future__ import annotations

import time
from datetime import datetime


class ManualClock:
    """Call it to read the time; :meth:`set` or :meth:`advance` it to move it.

    ``start`` is a Unix timestamp or an aware :class:`~datetime.datetime`;
    without one the clock starts at the real time, so other processes on the
    real clock agree with it. ``now`` is the current reading in seconds.
    """

    def __init__(self, start: float | datetime | None = None) -> None:
        self.now = time.time() if start is None else _seconds(start)

    def __call__(self) -> float:
        return self.now

    def set(self, moment: float | datetime) -> None:
        self.now = _seconds(moment)

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def __repr__(self) -> str:
        return f"ManualClock({self.now!r})"


def _seconds(moment: float | datetime) -> float:
    return moment.timestamp() if isinstance(moment, datetime) else float(moment)
