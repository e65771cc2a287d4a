"""The PostgreSQL engine's clock: the server's, so that hosts whose clocks disagree agree on it.

Workers on many hosts share one table of leases: one host writes a lease's
expiry and another decides that it has passed. With each host's own clock, a
host two minutes ahead reclaims every live job. So every time the engine
writes or compares (a lease's expiry, reclaim, run_after, a claim's start, a
token bucket) is the server's ``clock_timestamp()``, epoch seconds.

Asking the server for each timestamp would cost a round trip per verb: the
clock reads the server's time once, keeps its offset from this host's
monotonic clock (which no setting of the wall clock moves), and reads it again
every ``resync`` seconds. A reading is off by at most half a round trip, so a
reading whose round trip was slow (a loaded host, a busy server: tens of
milliseconds) is taken again, up to :data:`READINGS` times, and the one with
the shortest round trip kept, as NTP does. Two workers' times then agree to
within a millisecond or so even when they start on a busy machine, which is
what orders a flow step's start after its parent's end when two workers wrote
them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from jobdef.errors import BackendError

RESYNC = 60.0  # seconds between readings of the server's clock
RETRY = 5.0  # seconds before trying again after a reading that failed
# A reading whose round trip took longer than this is taken again, at most READINGS
# times in all; the one with the shortest round trip is kept.
GOOD_ROUND_TRIP = 0.002
READINGS = 3


class ServerClock:
    """Epoch seconds on the server's clock; ``read`` asks the server (one round trip)."""

    def __init__(self, read: Callable[[], float], resync: float = RESYNC) -> None:
        self._read = read
        self.resync = resync
        self._offset: float | None = None
        self._next_sync = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        if self._offset is None or time.monotonic() >= self._next_sync:
            self._sync()
        assert self._offset is not None
        return time.monotonic() + self._offset

    def _sync(self) -> None:
        with self._lock:
            if self._offset is not None and time.monotonic() < self._next_sync:
                return  # another thread just read it
            best: tuple[float, float] | None = None  # (round trip, offset)
            for _ in range(READINGS):
                before = time.monotonic()
                try:
                    server = self._read()
                except BackendError:
                    if best is not None:
                        break  # keep the reading taken
                    if self._offset is None:
                        raise  # no time to give: the verb that asked fails as it would
                    # The server is out: keep the offset read last (the monotonic clock
                    # drifts by microseconds a minute) and ask again a little later.
                    self._next_sync = time.monotonic() + RETRY
                    return
                after = time.monotonic()
                reading = (after - before, server - (before + after) / 2)
                best = reading if best is None else min(best, reading)
                if best[0] <= GOOD_ROUND_TRIP:
                    break
            assert best is not None
            self._offset = best[1]
            self._next_sync = time.monotonic() + self.resync
