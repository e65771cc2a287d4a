"""The dashboard's workers page and its ``/metrics``.

*Workers* (``/workers``, ``/api/workers``): every worker registered in the
workers table, read as ``jobdef workers`` reads it (the same function: the rows,
the store's time, stale when the last beat is older than the worker's lease),
with its running jobs linked to their pages.

``/metrics``: the gauges of the store's state in Prometheus' text format, from
the reading a worker's ``/metrics`` makes (:func:`jobdef.telemetry.gauges.read`).
The reading is cached for :data:`METRICS_CACHE_SECONDS` whatever the scrape rate,
so any number of scrapers cost the store one reading per interval; readings are
made one at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from jobdef.dashboard.store import Store
from jobdef.dashboard.views import age, when
from jobdef.policy.registry import Registry
from jobdef.telemetry import gauges
from jobdef.telemetry.presence import queue_fields, registered_workers

# How long one reading of the gauges serves /metrics, seconds.
METRICS_CACHE_SECONDS = 15.0
# The gauge that says when the reading was made (epoch seconds, the store's clock).
READ_AT = "jobdef_gauges_read_timestamp_seconds"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def workers(store: Store) -> dict[str, Any]:
    """The registered workers, oldest start first, stale ones marked."""
    found, now = store.call(registered_workers, store.verbs)
    rows = []
    for w in found:
        beat_age = max(now - w.last_beat, 0.0)
        rows.append(
            {
                "id": w.id,
                "host": w.host,
                "pid": w.pid,
                **queue_fields(w),
                "concurrency": w.concurrency,
                "version": w.version,
                "started_at": when(w.started_at),
                "last_beat": when(w.last_beat),
                "last_beat_age": round(beat_age, 3),
                "last_beat_text": age(beat_age),
                "lease_seconds": w.lease_seconds,
                "stale": w.stale(now),
                "running": list(w.running),
            }
        )
    stale = sum(1 for row in rows if row["stale"])
    return {"workers": rows, "alive": len(rows) - stale, "stale": stale, "now": when(now)}


class MetricsCache:
    """The text of ``/metrics``: one reading of the store per ``seconds``, one at a time."""

    def __init__(
        self,
        store: Store,
        registry: Registry | None = None,
        *,
        seconds: float = METRICS_CACHE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        # The sheets: every job and queue they name has a series, 0 without rows.
        self.registry = registry
        self.seconds = seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._text: str | None = None
        self._read_at: float | None = None

    def text(self) -> str:
        """The cached exposition, read afresh when older than ``seconds``; a failed
        reading raises (the scrape fails: a stale value is not passed off as current)."""
        with self._lock:
            now = self._monotonic()
            if self._text is None or self._read_at is None or now - self._read_at >= self.seconds:
                reading = self.store.call(gauges.read, self.store.verbs, self.registry)
                self._text = gauges.exposition(reading, read_timestamp=READ_AT)
                self._read_at = self._monotonic()
            return self._text
