"""The virtual clock of a test queue: it moves only when the queue or the test moves it."""

from __future__ import annotations

import threading
import time
from datetime import datetime


class VirtualClock:
    """Call it to read the time (epoch seconds); :meth:`set` or :meth:`advance` it.

    ``start`` is epoch seconds or an aware :class:`~datetime.datetime`; without one
    the clock starts at the real time. It never runs backwards: :meth:`set` to an
    earlier moment is refused, since the store orders attempts by it.
    """

    def __init__(self, start: float | datetime | None = None) -> None:
        self._now = time.time() if start is None else seconds(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self._now

    @property
    def now(self) -> float:
        return self._now

    def set(self, moment: float | datetime) -> None:
        target = seconds(moment)
        with self._lock:
            if target < self._now:
                raise ValueError(
                    f"the virtual clock runs forwards only: {_iso(target)} is before its "
                    f"reading {_iso(self._now)}; start the queue earlier (start=...) instead"
                )
            self._now = target

    def advance(self, by: float) -> None:
        if by < 0:
            raise ValueError(f"the virtual clock runs forwards only: cannot advance by {by:g}s")
        with self._lock:
            self._now += by

    def __repr__(self) -> str:
        return f"VirtualClock({_iso(self._now)})"


def seconds(moment: float | datetime) -> float:
    """``moment`` as epoch seconds; a naive datetime is refused (which zone would it be?)."""
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            raise ValueError(
                f"{moment.isoformat()} has no time zone; pass an aware datetime, e.g. "
                "datetime(2026, 1, 5, 3, 0, tzinfo=ZoneInfo('Asia/Tokyo'))"
            )
        return moment.timestamp()
    return float(moment)


def _iso(at: float) -> str:
    from datetime import UTC

    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
