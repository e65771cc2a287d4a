"""Prometheus metrics of a worker, served over HTTP (``jobdef worker --metrics-port``).

Optional: this module imports ``prometheus_client`` (the ``jobdef[metrics]``
extra) and is imported only when metrics are asked for. Every count is made in
the worker process from what it records in the store (a claim, a completion, a
retry, a burial, a release, a reclaim, a refused late write), never in a handler
process, so a child that dies loses no increment and the counters agree with
the attempts table.

Labels are bounded: job and queue names come from the sheets, outcomes from a
fixed list and channels from the sheets' notify blocks; args never label a
series. Each worker has a registry of its own (not the process-global one), so
two workers in one process (tests) do not share counts.

The gauges (queue depth, running, oldest queued age, dead jobs waiting, outbox
backlog) describe the whole store, so they are read from it by
:class:`GaugeReader`, a maintenance service: on an engine that elects a
maintainer only the elected worker reads them, every ``interval`` (15 s),
whatever the number of workers; sum or ``max`` them across workers in queries.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from jobdef.backends.protocol import Backend

# Outcomes of an attempt, as the attempts table records them.
OUTCOMES = ("done", "retry", "dead", "timeout", "crashed", "reclaimed", "released")
# Attempt durations, seconds: from a few milliseconds to the hour a batch job may take.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
DEFAULT_METRICS_PORT = 9464
DEFAULT_GAUGE_INTERVAL = 15.0


class Series:
    """The counters and histogram of one (job, queue), looked up once: a labelled
    child costs a locked dict lookup per call, which a worker pays per attempt."""

    def __init__(self, metrics: Metrics, job: str, queue: str) -> None:
        self.started = metrics.started.labels(job, queue)
        self.duration = metrics.duration.labels(job, queue)
        self._finished = {
            outcome: metrics.finished.labels(job, queue, outcome) for outcome in OUTCOMES
        }

    def finished(self, outcome: str) -> Any:
        return self._finished[outcome]


class Metrics:
    """The counters, histogram and gauges of one worker, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.enqueued = Counter(
            "jobdef_jobs_enqueued",
            "Jobs this process enqueued (the scheduler's slots among them).",
            ["job", "queue"],
            registry=r,
        )
        self.started = Counter(
            "jobdef_jobs_started",
            "Attempts this worker started (claims).",
            ["job", "queue"],
            registry=r,
        )
        self.finished = Counter(
            "jobdef_jobs_finished",
            "Attempts this worker recorded, by how they ended (the attempts table's outcome).",
            ["job", "queue", "outcome"],
            registry=r,
        )
        self.duration = Histogram(
            "jobdef_attempt_duration_seconds",
            "How long the handler of an attempt ran, as its process measured it.",
            ["job", "queue"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.refused = Counter(
            "jobdef_late_writes_refused",
            "Writes of an attempt refused because its lease had expired and the job was reclaimed.",
            ["job", "queue"],
            registry=r,
        )
        self.reclaims = Counter(
            "jobdef_lease_reclaims",
            "Expired leases (their worker died or froze) this worker reclaimed.",
            ["job", "queue"],
            registry=r,
        )
        self.deliveries = Counter(
            "jobdef_outbox_deliveries",
            "Notifications delivered, per channel.",
            ["channel"],
            registry=r,
        )
        self.delivery_failures = Counter(
            "jobdef_outbox_delivery_failures",
            "Failed notification deliveries (retried later), per channel.",
            ["channel"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "jobdef_queue_depth", "Queued jobs, per queue.", ["queue"], registry=r
        )
        self.queue_running = Gauge(
            "jobdef_queue_running", "Running jobs, per queue.", ["queue"], registry=r
        )
        self.oldest_queued = Gauge(
            "jobdef_queue_oldest_queued_age_seconds",
            "Age of the oldest runnable queued job, per queue (0: none).",
            ["queue"],
            registry=r,
        )
        self.dead = Gauge(
            "jobdef_jobs_dead", "Dead jobs waiting for an operator, per job.", ["job"], registry=r
        )
        self.outbox_backlog = Gauge(
            "jobdef_outbox_backlog", "Notifications not delivered yet.", registry=r
        )
        self.gauges_read_at = Gauge(
            "jobdef_gauges_read_timestamp_seconds",
            "When this worker last read the queue gauges from the store (0: it does not).",
            registry=r,
        )
        self._lock = threading.Lock()
        self._server: WSGIServer | None = None
        # Labels are bounded (the sheets' names), so is this.
        self._series: dict[tuple[str, str], Series] = {}

    def series(self, job: str, queue: str) -> Series:
        """The per-attempt series of ``job`` on ``queue`` (created at zero on first use)."""
        found = self._series.get((job, queue))
        if found is None:
            found = self._series[(job, queue)] = Series(self, job, queue)
        return found

    def serve(self, port: int, address: str = "0.0.0.0") -> int:
        """Serve ``/metrics`` on ``port`` (0: any free one) in a daemon thread; the port."""
        self._server, _thread = start_http_server(port, address, registry=self.registry)
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving ``/metrics``."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def read_gauges(self, backend: Backend, now: float) -> None:
        """Set the gauges from the store: one read of the queues, the counts, the outbox."""
        queues = backend.queues()
        counts = backend.stats()
        backlog = len(backend.outbox_pending())
        with self._lock:
            _reset(self.queue_depth, self.queue_running, self.oldest_queued, self.dead)
            for info in queues:
                self.queue_depth.labels(info.queue).set(info.queued)
                self.queue_running.labels(info.queue).set(info.running)
                self.oldest_queued.labels(info.queue).set(info.oldest_queued_age or 0.0)
            dead: dict[str, int] = {}
            for count in counts:
                if count.state == "dead":
                    dead[count.job] = dead.get(count.job, 0) + count.count
            for job, number in dead.items():
                self.dead.labels(job).set(number)
            self.outbox_backlog.set(backlog)
            self.gauges_read_at.set(now)


def _reset(*gauges: Gauge) -> None:
    """Forget every series: a queue that disappeared must not keep its last value."""
    for gauge in gauges:
        gauge.clear()


def preset(metrics: Metrics, pairs: Iterable[tuple[str, str]]) -> None:
    """Create the series of each (job, queue) at zero, so a rate() sees their first
    increment."""
    for job, queue in pairs:
        metrics.series(job, queue)
