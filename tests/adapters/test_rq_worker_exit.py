"""An RQ worker of jobdef's class leaves its command channel at once when it exits.

RQ listens on a worker's command channel in a thread that sleeps up to a minute
between reads, and redis-py 8's ``stop()`` waits for that thread. On a busy
machine the thread can read the reply to the worker's unsubscribe before RQ stops
it, and then sleeps its whole sleep waiting for a new subscription: a ``--burst``
worker took a minute to exit after its last job.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from jobdef.adapters.rq import SheetWorker
from support import eventually


def test_a_worker_whose_command_thread_read_the_unsubscribe_exits_within_seconds(
    tmp_path: Path, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race made certain: the thread reads the unsubscribe's reply and goes back to
    wait for a subscription before the worker stops it. RQ's own thread holds the exit
    up to 60 s there; jobdef's worker's, about a second."""
    monkeypatch.setenv("JOBDEF_DATABASE_URL", f"sqlite:///{tmp_path / 'runs.db'}")
    client = redis.Redis.from_url(redis_url)
    worker = SheetWorker([prefix], connection=client, name=f"{prefix}-worker")
    try:
        worker.subscribe()
        assert worker.pubsub is not None
        eventually(lambda: worker.pubsub.subscribed, what="the command channel subscribed")
        worker.pubsub.unsubscribe()
        eventually(lambda: not worker.pubsub.subscribed, what="the thread read the reply")
        time.sleep(0.2)  # the thread waits for a subscription again
        started = time.monotonic()
        worker.unsubscribe()
        assert time.monotonic() - started < 10  # not RQ's thread's sleep of a minute
    finally:
        client.close()
