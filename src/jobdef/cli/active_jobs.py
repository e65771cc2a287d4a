"""How many jobs of each name are in the job store right now, for ``jobdef diff --db``.

A breaking change matters most for the rows already queued or running under the
old policy; counting them turns "jobs already queued" into a number. Read-only:
the database is neither created nor migrated.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry
    from jobdef.review.diff import Recorded

ACTIVE_STATES = ("queued", "running")


def active_jobs(url: str) -> dict[str, int]:
    """Job name -> how many of its jobs are queued or running in the database at ``url``."""
    from jobdef.backends import open_backend

    backend = open_backend(url, create=False, migrate=False)
    try:
        counts: Counter[str] = Counter()
        for row in backend.stats():
            if row.state in ACTIVE_STATES:
                counts[row.job] += row.count
        return dict(counts)
    finally:
        backend.close()


# At most this many done jobs of one job are read to count those inside its dedupe window.
WINDOW_SCAN = 10_000


def recorded_jobs(url: str, registry: Registry, now: float) -> dict[str, Recorded]:
    """Job name -> the done jobs the store keeps of each job with an idempotency key, and
    how many of them finished inside the job's dedupe window (ending at ``now``)."""
    from jobdef.backends import open_backend
    from jobdef.review.diff import Recorded

    backend = open_backend(url, create=False, migrate=False)
    try:
        done: Counter[str] = Counter()
        for row in backend.stats():
            if row.state == "done":
                done[row.job] += row.count
        out: dict[str, Recorded] = {}
        for job in registry:
            if job.idempotency.key is None:
                continue
            window = job.idempotency.dedupe_window
            inside = None
            if window is not None and done[job.name]:
                since = now - window
                rows = backend.list_jobs(state="done", job=job.name, limit=WINDOW_SCAN)
                inside = sum(1 for r in rows if (r.finished_at or 0) >= since)
            elif window is not None:
                inside = 0
            out[job.name] = Recorded(done=done[job.name], done_in_window=inside)
        return out
    finally:
        backend.close()
