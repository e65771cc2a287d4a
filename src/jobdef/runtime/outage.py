"""When the job store fails under a running worker: back off, keep what is held, log once.

A full disk, a read-only file system or a PostgreSQL server that went away
makes every store call fail for a while. The worker does not exit then: the
jobs its children finished stay in memory as completions to record, failed
attempts as outcomes to record, and it tries the store again after a growing
pause (0.25 s doubling up to 5 s). Once a call succeeds it records them in
the usual fenced transitions, so a job whose lease ran out meanwhile (and was
reclaimed elsewhere) is refused rather than recorded twice.

Only a store that worked before counts as out: a worker whose first call
fails (tables missing, no permission, a wrong URL) stops with that error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger("jobdef.worker")

FIRST_PAUSE = 0.25
LONGEST_PAUSE = 5.0


@dataclass
class StoreOutage:
    """The worker's view of a store that keeps failing; ``since`` is ``None`` while it works.

    ``worked``: some call has succeeded since the worker started.
    """

    worked: bool = False
    since: float | None = None
    failures: int = 0
    retry_at: float = 0.0

    def ready(self, now: float) -> bool:
        """Whether the worker may call the store again at ``now`` (monotonic seconds)."""
        return now >= self.retry_at

    def failed(self, error: Exception, now: float, holding: int) -> None:
        """Note a failed call: the first one is logged with what the worker holds."""
        self.failures += 1
        pause = min(LONGEST_PAUSE, FIRST_PAUSE * 2 ** (self.failures - 1))
        self.retry_at = now + pause
        if self.since is None:
            self.since = now
            log.error(
                "the job store cannot be used: %s; holding %d job(s) and their results, "
                "trying again every %gs at most",
                error,
                holding,
                LONGEST_PAUSE,
            )

    def recovered(self, now: float) -> None:
        """Note a call that worked: the end of an outage is logged."""
        self.worked = True
        if self.since is not None:
            log.warning(
                "the job store works again after %.1fs (%d failed calls)",
                now - self.since,
                self.failures,
            )
        self.since = None
        self.failures = 0
        self.retry_at = 0.0
