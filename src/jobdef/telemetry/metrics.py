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
backlog, workers alive and stale: :mod:`jobdef.telemetry.gauges`, the reading the
dashboard's ``/metrics`` serves too) describe the whole store, so they are read
from it by
:class:`GaugeReader`, a maintenance service: on an engine that elects a
maintainer only the elected worker reads them, every ``interval`` (15 s),
whatever the number of workers; sum or ``max`` them across workers in queries.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder

from jobdef.backends.records import OUTCOMES
from jobdef.telemetry.gauges import GAUGES, StoreGauges, read, samples
from jobdef.telemetry.http_server import DEFAULT_HOST, GuardedHTTPServer, Reply, Request, Route

if TYPE_CHECKING:
    from jobdef.backends.protocol import Backend

# Attempt durations, seconds: from a few milliseconds to the hour a batch job may take.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
# The histogram's "le" labels, as Prometheus writes them (1.0, not 1).
_BOUNDS = [repr(float(bound)) for bound in DURATION_BUCKETS] + ["+Inf"]
DEFAULT_METRICS_PORT = 9464
DEFAULT_GAUGE_INTERVAL = 15.0


class Series:
    """The per-attempt counts of one (job, queue), as plain numbers.

    The worker's loop is the only writer, once or twice per attempt, and a
    Prometheus counter takes a lock per increment: plain numbers cost a fraction
    of that, and :class:`_AttemptCollector` turns them into the counters and the
    histogram when ``/metrics`` is scraped.
    """

    __slots__ = ("buckets", "finished", "reclaims", "refused", "started", "sum")

    def __init__(self) -> None:
        self.started = 0
        self.finished: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self.refused = 0
        self.reclaims = 0
        # Observations per bucket (not cumulative), the last one past every bound.
        self.buckets = [0] * (len(DURATION_BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.buckets[bisect.bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.sum += seconds


class _AttemptCollector:
    """The counters and histogram of every :class:`Series`, read at each scrape."""

    def __init__(self, series: dict[tuple[str, str], Series]) -> None:
        self.series = series

    def describe(self) -> list[Any]:
        return []  # nothing to check at registration: the names are this module's own

    def collect(self) -> Iterator[Any]:
        labels = ["job", "queue"]
        started = CounterMetricFamily("jobdef_jobs_started", _STARTED, labels=labels)
        finished = CounterMetricFamily(
            "jobdef_jobs_finished", _FINISHED, labels=[*labels, "outcome"]
        )
        refused = CounterMetricFamily("jobdef_late_writes_refused", _REFUSED, labels=labels)
        reclaims = CounterMetricFamily("jobdef_lease_reclaims", _RECLAIMS, labels=labels)
        duration = HistogramMetricFamily(
            "jobdef_attempt_duration_seconds", _DURATION, labels=labels
        )
        for (job, queue), one in list(self.series.items()):  # a copy: the loop may add
            started.add_metric([job, queue], one.started)
            for outcome, count in list(one.finished.items()):
                finished.add_metric([job, queue, outcome], count)
            refused.add_metric([job, queue], one.refused)
            reclaims.add_metric([job, queue], one.reclaims)
            counts = list(one.buckets)
            cumulative = list(itertools.accumulate(counts))
            duration.add_metric([job, queue], list(zip(_BOUNDS, cumulative, strict=True)), one.sum)
        yield from (started, finished, duration, refused, reclaims)


_STARTED = "Attempts this worker started (claims)."
_FINISHED = "Attempts this worker recorded, by how they ended (the attempts table's outcome)."
_DURATION = "How long the handler of an attempt ran, as its process measured it."
_REFUSED = "Writes of an attempt refused because its lease had expired and the job was reclaimed."
_RECLAIMS = "Expired leases (their worker died or froze) this worker reclaimed."


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
        # The gauges of the store's state (jobdef.telemetry.gauges), by name.
        self.store_gauges = {
            name: Gauge(name, help_text, [] if label is None else [label], registry=r)
            for name, help_text, label in GAUGES
        }
        self.gauges_read_at = Gauge(
            "jobdef_gauges_read_timestamp_seconds",
            "When this worker last read the queue gauges from the store (0: it does not).",
            registry=r,
        )
        self._lock = threading.Lock()
        self._server: GuardedHTTPServer | None = None
        # Labels are bounded (the sheets' names), so is this.
        self._series: dict[tuple[str, str], Series] = {}
        r.register(_AttemptCollector(self._series))

    def series(self, job: str, queue: str) -> Series:
        """The per-attempt series of ``job`` on ``queue`` (created at zero on first use)."""
        found = self._series.get((job, queue))
        if found is None:
            found = self._series[(job, queue)] = Series()
        return found

    def serve(self, port: int, address: str = DEFAULT_HOST) -> int:
        """Serve ``/metrics`` on ``address``:``port`` (0: any free port) in a daemon thread;
        the port. The server is the probes' (:mod:`jobdef.telemetry.http_server`), not
        prometheus_client's, which takes a thread per connection and never times one out."""
        server = GuardedHTTPServer({"/metrics": Route(self.scrape, slow=True)}, "jobdef-metrics")
        bound = server.start(address, port)
        self._server = server
        return bound

    def scrape(self, request: Request) -> Reply:
        """``/metrics`` in the format the scraper's Accept asks for (Prometheus text, or
        OpenMetrics), as prometheus_client's own server chooses it."""
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Reply(200, encode(self.registry), content_type)

    def close(self) -> None:
        """Stop serving ``/metrics``."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def read_gauges(self, backend: Backend, now: float) -> None:
        """Set the gauges from one reading of the store (:func:`jobdef.telemetry.gauges.read`)."""
        self.set_gauges(read(backend), now)

    def set_gauges(self, reading: StoreGauges, now: float) -> None:
        with self._lock:
            # A queue or job that disappeared must not keep its last value.
            for name, _help, label in GAUGES:
                if label is not None:
                    self.store_gauges[name].clear()
            for name, label_value, value in samples(reading):
                gauge = self.store_gauges[name]
                (gauge if label_value is None else gauge.labels(label_value)).set(value)
            self.gauges_read_at.set(now)


def preset(metrics: Metrics, pairs: Iterable[tuple[str, str]]) -> None:
    """Create the series of each (job, queue) at zero, so a rate() sees their first
    increment."""
    for job, queue in pairs:
        metrics.series(job, queue)
