"""Given the sheets, the store gauges have a series for every job and queue they name,
0 when the store has no row of it, so an alert on one never reads "no data"; on both
engines, through a worker's gauges, the text exposition and the dashboard's cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, ErrorInfo
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from jobdef.telemetry import gauges

pytestmark = pytest.mark.every_engine

prometheus_parser = pytest.importorskip("prometheus_client.parser")

SHEETS = """\
apiVersion: jobdef/v1
kind: Job
name: send_mail
handler: handlers:send_mail
queue: mail
max_attempts: 1
errors: {default: fatal}
args:
  n: {type: integer}
---
apiVersion: jobdef/v1
kind: Job
name: resize
handler: handlers:resize
max_attempts: 1
errors: {default: fatal}
args:
  n: {type: integer}
---
apiVersion: jobdef/v1
kind: Queue
name: bulk
concurrency: 1
"""
SHEET_QUEUES = {"mail", "default", "bulk"}


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "jobs.yaml").write_text(SHEETS, encoding="utf-8")
    return load_registry([folder])


def parse(text: str) -> dict[str, dict[str, float]]:
    """{gauge name: {label value: value}} of the labelled series of ``text``."""
    found: dict[str, dict[str, float]] = {}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels:
                [value] = sample.labels.values()
                found.setdefault(sample.name, {})[value] = sample.value
    return found


def bury_one(backend: Backend, registry: Registry) -> None:
    Queue(backend, registry).enqueue("send_mail", {"n": 1})
    [record] = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60, limit=1))
    assert backend.bury(record.lease, ErrorInfo("ValueError", "boom", ""))


def test_every_job_and_queue_of_the_sheets_has_a_series(
    backend: Backend, registry: Registry
) -> None:
    from prometheus_client import generate_latest

    from jobdef.telemetry.metrics import Metrics

    bury_one(backend, registry)
    backend.set_paused("elsewhere", True)  # a queue of the store the sheets do not name
    reading = gauges.read(backend, registry)
    metrics = Metrics()
    metrics.set_gauges(reading, 0.0)
    for text in (generate_latest(metrics.registry).decode(), gauges.exposition(reading)):
        series = parse(text)
        assert series["jobdef_jobs_dead"] == {"send_mail": 1.0, "resize": 0.0}
        queues = SHEET_QUEUES | {"elsewhere"}
        assert series["jobdef_queue_depth"] == dict.fromkeys(queues, 0.0)
        assert series["jobdef_queue_running"] == dict.fromkeys(queues, 0.0)
        assert series["jobdef_queue_oldest_queued_age_seconds"] == dict.fromkeys(queues, 0.0)


def test_without_the_sheets_only_what_the_store_holds(backend: Backend, registry: Registry) -> None:
    bury_one(backend, registry)
    series = parse(gauges.exposition(gauges.read(backend)))
    assert series["jobdef_jobs_dead"] == {"send_mail": 1.0}
    assert "jobdef_queue_depth" not in series  # no queue has a row or an active job


def test_the_dashboards_metrics_cache_reads_with_its_sheets(
    db_url: str, registry: Registry
) -> None:
    from jobdef.dashboard.store import Store
    from jobdef.dashboard.workers import MetricsCache

    open_backend(db_url).close()  # the schema
    dashboard_store = Store(db_url)
    try:
        series = parse(MetricsCache(dashboard_store, registry).text())
    finally:
        dashboard_store.close()
    assert series["jobdef_jobs_dead"] == {"send_mail": 0.0, "resize": 0.0}
    assert series["jobdef_queue_depth"] == dict.fromkeys(SHEET_QUEUES, 0.0)


def test_with_the_sheets_dead_jobs_are_counted_per_job_never_by_a_pass_over_the_table(
    backend: Backend, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-state counts read every row of the jobs table; with the sheets the
    reading takes one bounded count per job instead, and never calls them."""
    bury_one(backend, registry)
    bury_one(backend, registry)

    def full_pass() -> None:
        raise AssertionError("stats() reads the whole jobs table")

    monkeypatch.setattr(backend, "stats", full_pass)
    assert gauges.read(backend, registry).dead == {"send_mail": 2, "resize": 0}
    assert backend.dead_count("send_mail", 1) == 1  # the cap bounds the count
