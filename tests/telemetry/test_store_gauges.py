"""The gauges read from the store, on both engines: the outbox backlog is a bounded count
of the undelivered rows, and a worker's gauges and the text exposition carry the reading."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, Notification
from jobdef.backends.workers import WorkerInfo
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from jobdef.telemetry import gauges
from support import eventually

pytestmark = pytest.mark.every_engine

prometheus_parser = pytest.importorskip("prometheus_client.parser")

SHEETS = Path(__file__).resolve().parent / "sheets"
BOOM = ErrorInfo("ValueError", "boom", "")


def bury_with_notes(backend: Backend, count: int) -> None:
    """``count`` jobs buried, each with one message to the outbox."""
    queue = Queue(backend, load_registry([SHEETS]))
    ids = [queue.enqueue("broken", {"i": n}).id for n in range(count)]
    claimed = []

    def all_claimed() -> bool:
        claimed.extend(backend.claim(ClaimOptions(worker_id="t", lease_seconds=60, limit=count)))
        return len(claimed) == len(ids)

    eventually(all_claimed, 10, "the jobs to be claimable")
    for n, record in enumerate(claimed):
        note = Notification("ops", "dead", record.job, {"n": n}, f"m{n}")
        assert backend.bury(record.lease, BOOM, notifications=[note])


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in prometheus_parser.text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_the_outbox_backlog_is_the_number_of_undelivered_rows(backend: Backend) -> None:
    assert gauges.read(backend).outbox_backlog == 0
    bury_with_notes(backend, 5)
    assert gauges.read(backend).outbox_backlog == len(backend.outbox_pending()) == 5
    first, second, *_ = backend.outbox_claim(limit=10, lease_seconds=30)  # leased: undelivered
    assert gauges.read(backend).outbox_backlog == 5
    backend.outbox_delivered([first.id, second.id])
    assert gauges.read(backend).outbox_backlog == len(backend.outbox_pending()) == 3
    # Bounded: it stops counting at the limit.
    assert backend.outbox_backlog(2) == 2  # type: ignore[attr-defined]
    assert backend.outbox_backlog(10) == 3  # type: ignore[attr-defined]


def test_a_workers_gauges_and_the_exposition_carry_one_reading(backend: Backend) -> None:
    from jobdef.telemetry.metrics import Metrics

    bury_with_notes(backend, 3)
    backend.outbox_delivered([backend.outbox_claim(limit=1, lease_seconds=30)[0].id])
    Queue(backend, load_registry([SHEETS])).enqueue("later", {"i": 1}, delay=3600)
    now = backend.clock()  # type: ignore[attr-defined]
    info = WorkerInfo("w-1", "host", 1, None, 1, 30.0, "0", 0.0, 0.0)
    backend.register_worker(info)  # type: ignore[attr-defined]
    reading = gauges.read(backend)
    assert (reading.workers_alive, reading.workers_stale) == (1, 0)
    dead = Counter()
    for count in backend.stats():
        if count.state == "dead":
            dead[count.job] += count.count
    assert reading.dead == dict(dead) == {"broken": 3}

    metrics = Metrics()
    metrics.set_gauges(reading, now)
    from prometheus_client import generate_latest

    for text in (generate_latest(metrics.registry).decode(), gauges.exposition(reading)):
        samples = parse(text)
        assert samples[("jobdef_outbox_backlog", ())] == len(backend.outbox_pending()) == 2
        assert samples[("jobdef_jobs_dead", (("job", "broken"),))] == 3
        assert samples[("jobdef_queue_depth", (("queue", "later"),))] == 1
        assert samples[("jobdef_workers_alive", ())] == 1
        assert samples[("jobdef_workers_stale", ())] == 0
