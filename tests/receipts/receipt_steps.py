"""The receipt endpoint's sheets and moving a job through its states with the store's
own verbs.

A module of its own, since ``from conftest import`` gets whichever test folder's conftest
was imported first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobdef.backends.records import ClaimOptions, ErrorInfo, JobRecord
from jobdef.runtime.queue import Queue

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"


def claim(queue: Queue, job_id: int) -> JobRecord:
    """Claim the one runnable job, ``job_id``, as a worker would."""
    [record] = queue.backend.claim(ClaimOptions(worker_id="test-worker", lease_seconds=60))
    assert record.id == job_id
    return record


def finish(queue: Queue, record: JobRecord, result: Any) -> None:
    """Complete a claimed job with ``result`` stored, as the worker stores it."""
    import json

    assert queue.backend.complete([record.lease], None, {record.id: json.dumps(result)}) == [True]


def fail(queue: Queue, record: JobRecord, *, retry: bool) -> None:
    """Fail a claimed job's attempt with an error whose text must never be shown."""
    error = ErrorInfo(
        type="billing.errors.LedgerLocked",
        message="ledger 7734 locked by secret-process",
        traceback='Traceback (most recent call last):\n  File "/srv/app/billing.py"',
    )
    if retry:
        later = queue.backend.clock() + 3600
        assert queue.backend.retry(record.lease, error, run_after=later, delay=3600)
    else:
        assert queue.backend.bury(record.lease, error)
