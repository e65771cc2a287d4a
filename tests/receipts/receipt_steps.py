"""What the receipt endpoint's tests share: their sheets, moving a job through its states
with the store's own verbs, and the hostile paths that must all get the one 404.

A module of its own, since ``from conftest import`` gets whichever test folder's conftest
was imported first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobdef.backends.records import ClaimOptions, ErrorInfo, JobRecord, Receipt
from jobdef.runtime.queue import Queue

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"

# Every key a receipt's object may have: a new key is a decision, made in
# jobdef.runtime.receipt_view and written in docs/receipts.md.
KEYS = {
    "state",
    "ended",
    "label",
    "lang",
    "title",
    "attempts",
    "max_attempts",
    "progress",
    "next_start",
    "created_at",
    "started_at",
    "finished_at",
    "result",
    "args",
}


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


def hostile_paths(receipt: Receipt) -> list[str]:
    """Paths that must all be answered exactly as an unknown token is: ids, near misses of
    a real token, traversal, other routes, huge and odd tokens."""
    token = receipt.token
    return [
        f"/receipts/{receipt.job_id}",
        "/receipts/1",
        "/receipts/0",
        "/receipts/-1",
        f"/receipts/{token[:-1]}",
        f"/receipts/{token}A",
        f"/receipts/{token[:-1]}{'A' if token[-1] != 'A' else 'B'}",
        f"/receipts/{token.swapcase()}",
        f"/receipts/{token[:16]}",
        f"/receipts/{token}%00",
        f"/receipts/{token}%20",
        f"/receipts/%20{token}",
        f"/receipts/{token}/",
        f"/receipts/{token}/events/",
        f"/receipts/{token}/../{receipt.job_id}",
        f"/receipts/..%2F{receipt.job_id}",
        "/receipts/..%2F..%2Fjobs",
        "/receipts/%2e%2e",
        "/receipts/",
        "/receipts",
        "/",
        f"/jobs/{receipt.job_id}",
        f"/api/jobs/{receipt.job_id}",
        "/receipts/" + "A" * 129,
        "/receipts/" + "A" * 8000,
        "/receipts/" + "0" * 35,
        "/receipts/%C3%A9" * 20,
        "/receipts/' OR '1'='1",
        "/receipts/%25",
    ]
