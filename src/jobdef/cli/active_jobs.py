"""How many jobs of each name are in the job store right now, for ``jobdef diff --db``.

A breaking change matters most for the rows already queued or running under the
old policy; counting them turns "jobs already queued" into a number. Read-only:
the database is neither created nor migrated.
"""

from __future__ import annotations

from collections import Counter

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
