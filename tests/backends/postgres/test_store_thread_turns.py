"""The worker's turns on PostgreSQL run on its store thread: the loop collects its
handler processes' results, and hands out their next tasks, while a turn is in flight."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import ClaimOptions, JobRecord, Lease
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.worker import Worker
from jobdef.sheets.pipeline import load_registry
from jobdef.telemetry.observer import WorkerTelemetry

from .helpers import query
from .sheets import write_sheets

pytestmark = pytest.mark.slow


class Collected(WorkerTelemetry):
    """Tells when the loop has collected the end of the job ``watched``."""

    def __init__(self) -> None:
        super().__init__()
        self.watched = 0
        self.collected = threading.Event()

    def ran(self, job_id: int, attempt: int, seconds: float | None) -> None:
        super().ran(job_id, attempt, seconds)
        if job_id == self.watched:
            self.collected.set()


class GatedTurns(PostgresBackend):
    """Completes the job ``gated`` only once the loop has collected the job ``watched``
    (or 10 s have passed): a loop that waited for the turn could never collect it."""

    def __init__(self, *args: Any, telemetry: Collected, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.telemetry = telemetry
        self.gated = 0
        self.collected_during_turn: bool | None = None
        self.threads: set[str] = set()

    def _gate(self, leases: Sequence[Lease]) -> None:
        self.threads.add(threading.current_thread().name)
        if any(lease.job_id == self.gated for lease in leases):
            self.collected_during_turn = self.telemetry.collected.wait(10)

    def complete(self, leases: Sequence[Lease], *args: Any, **kwargs: Any) -> list[bool]:
        self._gate(leases)
        return super().complete(leases, *args, **kwargs)

    def complete_and_claim(
        self,
        leases: Sequence[Lease],
        notifications: Mapping[int, Sequence[Any]] | None,
        options: ClaimOptions,
        results: Mapping[int, str] | None = None,
    ) -> tuple[list[bool], list[JobRecord]]:
        self._gate(leases)
        return super().complete_and_claim(leases, notifications, options, results)


@pytest.fixture
def gated(postgres_url: str, postgres_schema: str) -> Iterator[GatedTurns]:
    backend = GatedTurns(postgres_url, schema=postgres_schema, telemetry=Collected())
    backend.migrate()
    try:
        yield backend
    finally:
        backend.close()


def test_the_loop_collects_results_while_a_turn_is_in_flight(
    gated: GatedTurns, tmp_path: Path, postgres_url: str
) -> None:
    registry = load_registry([str(write_sheets(tmp_path / "jobdefs"))])
    queue = Queue(gated, registry)
    # Both claimed in the first turn, one to each process (one task ahead each): the first
    # ends at once, the second a moment later, while the turn that completes the first
    # waits for the loop to collect it.
    first = queue.enqueue("pause", {"marker": str(tmp_path / "a"), "seconds": 0.0}).job_id
    second = queue.enqueue("pause", {"marker": str(tmp_path / "b"), "seconds": 0.5}).job_id
    gated.gated, gated.telemetry.watched = first, second
    settings = WorkerSettings(burst=True, concurrency=2, prefetch=1)
    stats = Worker(gated, registry, settings, telemetry=gated.telemetry).run()

    assert gated.collected_during_turn is True
    assert gated.threads == {"jobdef-store"}  # every turn ran off the loop's thread
    assert stats.done == 2
    rows = query(
        postgres_url,
        f"SELECT j.id, j.state, count(a.*) FROM {gated.schema}.jobdef_jobs j "
        f"JOIN {gated.schema}.jobdef_attempts a ON a.job_id = j.id GROUP BY j.id ORDER BY j.id",
    )
    assert rows == [(first, "done", 1), (second, "done", 1)]
