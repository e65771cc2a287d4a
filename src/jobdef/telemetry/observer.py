"""What a worker tells its telemetry: the attempts it starts and records, and its turns.

The worker calls one :class:`WorkerTelemetry` at the points where it writes an
attempt's fate to the store (a claim starts attempts; a completion, retry,
burial, release or reclaim ends one; a refused late write ends none), so the
lines, counters and spans come from the worker process and from what the
store took: a handler process that dies loses nothing, and the counters match
the attempts table. Each ended attempt gets one log line, at info when it
went as planned (done, retry, released) and warning otherwise::

    job 42 send_reservation_mail attempt 1 done in 31 ms

Metrics (:mod:`jobdef.telemetry.metrics`, optional) and health
(:mod:`jobdef.telemetry.health`) are attached when the worker was asked for
them; without them each call is a log line or nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobdef.backends.records import JobRecord
from jobdef.policy.registry import Registry
from jobdef.redact import shown_args
from jobdef.telemetry.logs import args_text
from jobdef.telemetry.traces import ended_attempt_span

if TYPE_CHECKING:
    from jobdef.telemetry.health import Health
    from jobdef.telemetry.metrics import Metrics

log = logging.getLogger("jobdef.worker")

# Outcomes logged at info; the others (dead, timeout, crashed, reclaimed) at warning.
# A cancel is an operator's decision: planned.
_PLANNED = frozenset({"done", "retry", "released", "cancelled"})
# Outcomes of an attempt whose handler process was killed or died.
_KILLED = frozenset({"timeout", "crashed"})
# How an attempt's line says its outcome (the `outcome` field keeps the stored word):
# "attempt 1 retry in 0.7 ms" read as a retry 0.7 ms away.
_SAID = {
    "retry": "failed, retried",
    "dead": "failed, dead",
    "timeout": "timed out",
    "crashed": "crashed",
    "released": "released",
    "cancelled": "was cancelled",
}


@dataclass
class WorkerTelemetry:
    """The log lines, metrics and health of one worker."""

    # The worker's id, which its lines carry: set by the worker that reports through it.
    worker_id: str = ""
    metrics: Metrics | None = None
    health: Health | None = None
    # Log each attempt's args too (--log-args), cut to logs.MAX_ARGS_CHARS, the sensitive
    # ones of the sheets (the worker's registry, which it sets here) as ***.
    log_args: bool = False
    registry: Registry | None = None
    # The handler processes' log format (the worker's own is configured by its caller).
    log_format: str = "text"
    # How often the metrics gauges are read from the store, seconds.
    gauge_interval: float = 15.0
    # How long each attempt's handler ran, by (job id, attempt), until it is recorded.
    _durations: dict[tuple[int, int], float] = field(default_factory=dict)

    def enqueued(self, job: str, queue: str, count: int) -> None:
        """This worker enqueued ``count`` new jobs (the scheduler's cron slots)."""
        if self.metrics is not None:
            self.metrics.enqueued.labels(job, queue).inc(count)

    def claimed(self, records: Iterable[JobRecord]) -> None:
        """Attempts started: the store leased these jobs to the worker."""
        if self.metrics is None:
            return
        for record in records:
            self.metrics.series(record.job, record.queue).started += 1

    def ran(self, job_id: int, attempt: int, seconds: float | None) -> None:
        """A handler process reports how long an attempt ran (None: not known)."""
        if seconds is not None:
            self._durations[(job_id, attempt)] = seconds

    def finished(
        self,
        record: JobRecord,
        outcome: str,
        *,
        error_type: str | None = None,
        detail: str | None = None,
    ) -> None:
        """The store took how the attempt ended: one line, one count, one observation."""
        seconds = self._durations.pop((record.id, record.attempt), None)
        if self.metrics is not None:
            series = self.metrics.series(record.job, record.queue)
            series.finished[outcome] += 1
            if seconds is not None:
                series.observe(seconds)
        if outcome in _KILLED:
            # Its process could not end the attempt's span: the worker records it.
            ended_attempt_span(
                record.job,
                record.queue,
                record.id,
                record.attempt,
                record.trace_context,
                seconds=seconds,
                outcome=outcome,
                error_type=error_type or outcome,
            )
        level = logging.INFO if outcome in _PLANNED else logging.WARNING
        if not log.isEnabledFor(level):
            return
        duration_ms = None if seconds is None else round(seconds * 1000, 1)
        text = (
            f"job {record.id} {record.job} attempt {record.attempt} {_SAID.get(outcome, outcome)}"
        )
        if duration_ms is not None:
            took = f"{duration_ms:.0f} ms" if duration_ms >= 10 else f"{duration_ms} ms"
            text += f" {'in' if outcome == 'done' else 'after'} {took}"
        if error_type is not None:
            text += f" ({error_type})"
        if detail:
            text += f"; {detail}"
        extra: dict[str, Any] = {
            "worker": self.worker_id,
            "job": record.job,
            "job_id": record.id,
            "attempt": record.attempt,
            "queue": record.queue,
            "outcome": outcome,
            "duration_ms": duration_ms,
            "error_type": error_type,
            "_attempt_line": True,
        }
        if self.log_args:
            policy = self.registry.jobs.get(record.job) if self.registry else None
            extra["job_args"] = args_text(shown_args(policy, record.args))
        log.log(level, text, extra=extra)

    def refused(self, record: JobRecord) -> None:
        """A late write of this worker was refused: the job was reclaimed meanwhile."""
        self._durations.pop((record.id, record.attempt), None)
        if self.metrics is not None:
            self.metrics.series(record.job, record.queue).refused += 1

    def reclaimed(self, record: JobRecord, action: str) -> None:
        """This worker reclaimed an expired lease (another worker's attempt ended)."""
        if self.metrics is not None:
            self.metrics.series(record.job, record.queue).reclaims += 1
        self.finished(record, "reclaimed", error_type="LeaseExpired", detail=f"then {action}")

    def outbox_outcome(self, channel: str, messages: int, delivered: bool) -> None:
        """The outbox sender recorded a delivery (or a failed one) of ``messages`` messages
        on ``channel``; called from the sender's thread."""
        if self.metrics is None:
            return
        counter = self.metrics.deliveries if delivered else self.metrics.delivery_failures
        counter.labels(channel).inc(messages)

    def turned(self, *, handlers_ready: bool, store_outage: bool) -> None:
        """One turn of the worker's loop."""
        if self.health is not None:
            self.health.turned(handlers_ready=handlers_ready, store_outage=store_outage)

    def stopped(self) -> None:
        if self.health is not None:
            self.health.stopped()
