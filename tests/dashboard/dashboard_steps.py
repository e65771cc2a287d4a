"""Steps the dashboard tests share: putting jobs into a state through the backend verbs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, JobRecord
from jobdef.runtime.queue import Queue
from support import eventually

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"
SRC = HERE.parent.parent / "src"


def make_dead(
    backend: Backend, queue: Queue, job: str, args_list: list[dict[str, Any]], error: ErrorInfo
) -> list[int]:
    """Enqueue jobs and bury each at its first attempt with ``error`` (through the verbs)."""
    ids = [queue.enqueue(job, args).id for args in args_list]
    claimed: list[JobRecord] = []

    def all_claimed() -> bool:
        # The enqueue's run_after is on the queue's clock: on PostgreSQL another
        # session's estimate of the server clock may be a moment behind it.
        options = ClaimOptions(worker_id="test", lease_seconds=60, limit=len(ids))
        claimed.extend(backend.claim(options))
        return len(claimed) >= len(ids)

    eventually(all_claimed, 10, "the new jobs to be claimable")
    assert sorted(r.id for r in claimed) == sorted(ids), "only these jobs may be queued"
    for record in claimed:
        assert backend.bury(record.lease, error)
    return ids
