"""A worker's scheduler enqueues a batch job's slot and the handler gets that slot."""

from __future__ import annotations

import os
import threading
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from jobdef.backends import open_backend
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.runtime import Worker, WorkerSettings
from support import eventually

HERE = Path(__file__).resolve().parent


def test_worker_schedules_the_slot_and_hands_it_to_the_handler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("SLOT_OUT", str(tmp_path))
    report = JobPolicy(
        name="nightly_report",
        handler="queue_handlers:record_slot",
        mode="batch",
        schedule="0 3 * * *",
        timezone="Asia/Tokyo",
        queue="batch",
    )
    registry = Registry(jobs={"nightly_report": report}, channels={})
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    # The worker's clock says 03:00:05 in Tokyo; the store's clock is the real one, later.
    slot = datetime(2026, 5, 2, 3, tzinfo=ZoneInfo("Asia/Tokyo"))
    clock = lambda: slot.timestamp() + 5  # noqa: E731
    worker = Worker(backend, registry, WorkerSettings(poll_interval=0.02), clock=clock)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        eventually(lambda: any(tmp_path.glob("[0-9]*")), what="the scheduled job to run")
    finally:
        worker.request_stop()
        thread.join(timeout=30)
    (job,) = backend.list_jobs(job="nightly_report")
    backend.close()
    assert (tmp_path / str(job.id)).read_text(encoding="utf-8") == "2026-05-02T03:00:00+09:00"
    assert job.idempotency_key == "nightly_report@2026-05-02T03:00:00+09:00"
