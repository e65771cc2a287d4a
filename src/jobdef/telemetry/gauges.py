"""The gauges read from the store: one reading, for a worker's and the dashboard's /metrics.

:func:`read` takes one reading of the whole store's state (queue depth, running,
oldest queued age per queue; dead jobs waiting per job; the outbox backlog; the
workers alive and stale) in a fixed number of small queries whatever the size
of the tables. A worker's :class:`~jobdef.telemetry.metrics.Metrics` sets its
gauges from it; the dashboard writes it out as Prometheus text with
:func:`exposition`, which needs no prometheus_client.

The outbox backlog is counted up to :data:`BACKLOG_LIMIT` (a backlog past it
reads as that many): the count walks the index of undelivered rows and stops
there, so a stuck channel with millions of messages costs no more to read. A
queue's depth is counted the same way, up to
:data:`~jobdef.backends.verbs.QUEUED_COUNT_CAP`, and each job's dead jobs up to
:data:`DEAD_LIMIT`, one small query per job of the sheets (without the sheets,
the per-state counts, which read the whole table, are the only way to know the
jobs: the worker and the dashboard always pass them).

Given the sheets, a reading has a series for every job and queue they name, at 0
when the store has no row of it: an alert such as ``jobdef_jobs_dead{job="x"} > 0``
then reads 0, not "no data", for a job that never had a dead job (or whose dead
jobs were all resolved), and a queue nobody enqueued to yet still has its depth.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from jobdef.backends.protocol import Backend
from jobdef.backends.records import QueueInfo
from jobdef.backends.verbs import QUEUED_COUNT_CAP
from jobdef.backends.workers import tracks_workers
from jobdef.policy.registry import Registry

# Undelivered messages counted at most; a larger backlog reads as this many.
BACKLOG_LIMIT = 100_000
# A job's dead jobs are counted up to this many, through the index of finished rows.
DEAD_LIMIT = 100_000


@runtime_checkable
class _CountsBacklog(Protocol):
    def outbox_backlog(self, limit: int) -> int: ...


@runtime_checkable
class _CountsDead(Protocol):
    def dead_count(self, job: str, cap: int) -> int: ...


@dataclass(frozen=True)
class StoreGauges:
    """One reading of the store's state."""

    queues: list[QueueInfo]
    # Dead jobs waiting for an operator, per job name.
    dead: dict[str, int]
    outbox_backlog: int
    # None when the store's schema has no workers table yet.
    workers_alive: int | None
    workers_stale: int | None
    # When it was read, on the store's clock (epoch seconds).
    read_at: float = field(default=0.0)


def read(backend: Backend, registry: Registry | None = None) -> StoreGauges:
    """Read the gauges from ``backend`` (its verbs; each query bounded or per queue/job).

    ``registry``: the sheets; each job and queue they name that the store has no
    row of reads 0 (see the module's docstring).
    """
    queues = backend.queues()
    dead: dict[str, int] = {}
    if registry is not None:
        queues = with_sheet_queues(queues, registry)
        if isinstance(backend, _CountsDead):
            # One bounded count per job of the sheets, never a pass over the table.
            dead = {job: backend.dead_count(job, DEAD_LIMIT) for job in registry.jobs}
    if not dead:  # no sheets, or a backend of another make: the per-state counts
        for count in backend.stats():
            if count.state == "dead":
                dead[count.job] = dead.get(count.job, 0) + count.count
        for job in registry.jobs if registry is not None else ():
            dead.setdefault(job, 0)
    if isinstance(backend, _CountsBacklog):
        backlog = backend.outbox_backlog(BACKLOG_LIMIT)
    else:  # a backend of another make, without the counting verb
        backlog = len(backend.outbox_pending())
    alive = stale = None
    if tracks_workers(backend):
        workers = backend.workers()
        now = backend.clock()
        stale = sum(1 for worker in workers if worker.stale(now))
        alive = len(workers) - stale
    read_at = float(backend.clock())
    return StoreGauges(queues, dead, backlog, alive, stale, read_at)


def with_sheet_queues(queues: list[QueueInfo], registry: Registry) -> list[QueueInfo]:
    """``queues`` and, empty and not paused, each queue of the sheets (a ``Queue``
    document's or a job's) the store has no row of; by name."""
    named = set(registry.queues) | {job.queue for job in registry}
    known = {info.queue for info in queues}
    empty = [QueueInfo(queue=name, paused=False) for name in named - known]
    return sorted([*queues, *empty], key=lambda info: info.queue)


# name, help, label (None: a single series)
GAUGES: tuple[tuple[str, str, str | None], ...] = (
    ("jobdef_queue_depth", f"Queued jobs, per queue (counted up to {QUEUED_COUNT_CAP}).", "queue"),
    ("jobdef_queue_running", "Running jobs, per queue.", "queue"),
    (
        "jobdef_queue_oldest_queued_age_seconds",
        "Age of the oldest runnable queued job, per queue (0: none).",
        "queue",
    ),
    ("jobdef_jobs_dead", "Dead jobs waiting for an operator, per job.", "job"),
    (
        "jobdef_outbox_backlog",
        f"Notifications not delivered yet (counted up to {BACKLOG_LIMIT}).",
        None,
    ),
    ("jobdef_workers_alive", "Registered workers that beat within their lease.", None),
    ("jobdef_workers_stale", "Registered workers that stopped beating (dead or frozen).", None),
)


def samples(reading: StoreGauges) -> Iterator[tuple[str, str | None, float]]:
    """(gauge name, label value or None, value) of every series of ``reading``."""
    for info in reading.queues:
        yield "jobdef_queue_depth", info.queue, float(info.queued)
        yield "jobdef_queue_running", info.queue, float(info.running)
        yield "jobdef_queue_oldest_queued_age_seconds", info.queue, info.oldest_queued_age or 0.0
    for job, number in sorted(reading.dead.items()):
        yield "jobdef_jobs_dead", job, float(number)
    yield "jobdef_outbox_backlog", None, float(reading.outbox_backlog)
    if reading.workers_alive is not None and reading.workers_stale is not None:
        yield "jobdef_workers_alive", None, float(reading.workers_alive)
        yield "jobdef_workers_stale", None, float(reading.workers_stale)


def exposition(reading: StoreGauges, *, read_timestamp: str | None = None) -> str:
    """``reading`` in Prometheus' text format (version 0.0.4).

    ``read_timestamp``: the name of one more gauge holding when it was read (epoch
    seconds), so a scraper can tell a cached reading's age.
    """
    by_name: dict[str, list[tuple[str | None, float]]] = {}
    for name, label_value, value in samples(reading):
        by_name.setdefault(name, []).append((label_value, value))
    lines: list[str] = []
    for name, help_text, label in GAUGES:
        series = by_name.get(name)
        if series is None:
            continue
        lines += [f"# HELP {name} {_help(help_text)}", f"# TYPE {name} gauge"]
        for label_value, value in series:
            where = "" if label is None else f'{{{label}="{_label(label_value or "")}"}}'
            lines.append(f"{name}{where} {_number(value)}")
    if read_timestamp is not None:
        lines += [
            f"# HELP {read_timestamp} When these gauges were read from the store.",
            f"# TYPE {read_timestamp} gauge",
            f"{read_timestamp} {_number(reading.read_at)}",
        ]
    return "\n".join(lines) + "\n"


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
