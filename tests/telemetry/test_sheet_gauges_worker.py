"""A worker's gauges service reads the store with the worker's sheets: every job and
queue they name has a series on its /metrics, 0 without rows."""

from __future__ import annotations

import random

import pytest

from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.runtime.maintenance import MaintenanceContext
from jobdef.runtime.maintenance.gauges import GaugeReader
from jobdef.telemetry.observer import WorkerTelemetry

prometheus_parser = pytest.importorskip("prometheus_client.parser")


def test_the_gauge_reader_gives_every_job_and_queue_of_the_sheets_a_series(
    backend: Backend, registry: Registry
) -> None:
    from prometheus_client import generate_latest

    from jobdef.telemetry.metrics import Metrics

    metrics = Metrics()
    telemetry = WorkerTelemetry("w1", metrics=metrics)
    ctx = MaintenanceContext(
        backend, registry, "w1", lambda: 1_700_000_000.0, random.Random(1), telemetry=telemetry
    )
    GaugeReader(ctx).tick(1_700_000_000.0)
    text = generate_latest(metrics.registry).decode()
    found: dict[str, set[str]] = {}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels and sample.value == 0:
                found.setdefault(sample.name, set()).update(sample.labels.values())
    assert found["jobdef_jobs_dead"] == set(registry.jobs)
    queues = set(registry.queues) | {job.queue for job in registry}
    assert found["jobdef_queue_depth"] == queues
