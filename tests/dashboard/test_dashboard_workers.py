"""The workers page and /metrics of the dashboard, on SQLite and on PostgreSQL.

A real worker process registers and runs a job that holds; the page shows it with
its running job, and marks it stale once it is frozen (SIGSTOP) past its lease.
/metrics is parsed with prometheus_client's text parser and compared with the store.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_steps import SHEETS, Client
from workers_steps import WORKERS_SHEETS, HeldWorker, held_worker

from jobdef.backends.records import ClaimOptions, ErrorInfo, Notification
from jobdef.backends.workers import WorkerInfo
from jobdef.dashboard import Auth, create_app
from jobdef.dashboard.store import Store
from jobdef.dashboard.workers import MetricsCache
from support import eventually

prometheus_parser = pytest.importorskip("prometheus_client.parser")


@pytest.fixture
def held(store_url: str, tmp_path: Path) -> Iterator[HeldWorker]:
    yield from held_worker(store_url, tmp_path)


CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "")
TOKEN = "tok-" + "m" * 30


def worker_row(body: str, pid: int) -> str | None:
    """The table row of the worker whose pid is ``pid``, or None."""
    for row in re.findall(r'<tr data-worker="[^"]*".*?</tr>', body, re.DOTALL):
        if f'<td class="num">{pid}</td>' in row:
            return str(row)
    return None


@pytest.mark.slow
def test_the_page_shows_a_worker_with_its_running_job_then_marks_it_stale(store_url, serve, held):
    served = serve(create_app(store_url, WORKERS_SHEETS))
    client = Client(served.url)
    job_id = held.start()

    def running() -> str | None:
        status, _, body = client.request("/workers")
        assert status == 200
        row = worker_row(body, held.pid)
        return row if row is not None and f'/jobs/{job_id}"' in row else None

    row = eventually(running, 60, "the worker's row with its running job")
    assert '<td class="state">alive</td>' in row
    assert f'<a href="/jobs/{job_id}">{job_id}</a>' in row
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
    worker_id = html.unescape(cells[0])
    assert worker_id.split(":")[1] == str(held.pid)
    assert cells[4] == "<em>all queues</em>"  # queues
    assert cells[5] == "1"  # concurrency
    assert cells[8].endswith(" ago")

    status, _, text = client.request("/api/workers")
    assert status == 200
    [api] = [w for w in json.loads(text)["workers"] if w["pid"] == held.pid]
    assert (api["id"], api["running"], api["stale"]) == (worker_id, [job_id], False)
    assert api["lease_seconds"] == 1.0
    # The job's page, where the link leads, names the worker that runs it.
    status, _, body = client.request(f"/jobs/{job_id}")
    assert status == 200
    assert html.escape(worker_id) in body

    held.freeze()

    def stale() -> str | None:
        found = worker_row(client.request("/workers")[2], held.pid)
        return found if found is not None and "<strong>stale</strong>" in found else None

    row = eventually(stale, 30, "the frozen worker to be marked stale")
    assert 'class="stale"' in row
    assert f'<a href="/jobs/{job_id}">{job_id}</a>' in row  # its job is still its own
    summary = re.search(r'<p id="summary">(.*?)</p>', client.request("/workers")[2], re.DOTALL)
    assert summary is not None
    assert summary.group(1).startswith("0 alive, 1 stale")
    [api] = json.loads(client.request("/api/workers")[2])["workers"]
    assert api["stale"] is True


def test_the_page_says_when_no_worker_is_registered(store_url, serve):
    served = serve(create_app(store_url, SHEETS))
    status, _, body = Client(served.url).request("/workers")
    assert status == 200
    assert "No worker is registered" in body
    assert '<a href="/workers" aria-current="page">Workers</a>' in body
    assert json.loads(Client(served.url).request("/api/workers")[2])["workers"] == []


def bury_with_notes(backend, queue, orders: list[int]) -> None:
    """Dead ``ship_order`` jobs, each with one message in the outbox."""
    ids = [queue.enqueue("ship_order", {"order_id": order}).id for order in orders]
    claimed = []

    def all_claimed() -> bool:
        options = ClaimOptions(worker_id="test", lease_seconds=60, limit=len(ids))
        claimed.extend(backend.claim(options))
        return len(claimed) == len(ids)

    eventually(all_claimed, 10, "the new jobs to be claimable")
    for record in claimed:
        note = Notification("ops", "dead", record.job, {"id": record.id}, f"m{record.id}")
        assert backend.bury(record.lease, CONNECTION, notifications=[note])


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in prometheus_parser.text_string_to_metric_families(text)
        for sample in family.samples
    }


def by_label(samples, name: str) -> dict[str, float]:
    return {dict(labels).popitem()[1]: value for (n, labels), value in samples.items() if n == name}


def test_metrics_are_the_stores_gauges(store_url, serve, backend, queue):
    bury_with_notes(backend, queue, [1, 2, 3])
    backend.outbox_delivered([backend.outbox_claim(limit=1, lease_seconds=30)[0].id])
    for report in range(4):
        queue.enqueue("build_report", {"report_id": report})
    queue.enqueue("ship_order", {"order_id": 50})
    backend.register_worker(WorkerInfo("alive-1", "h", 1, None, 2, 3600.0, "0", 0.0, 0.0))
    backend.register_worker(WorkerInfo("gone-1", "h", 2, ("reports",), 1, 0.001, "0", 0.0, 0.0))
    time.sleep(0.05)  # past the second worker's lease: it is stale

    served = serve(create_app(store_url, SHEETS, read_only=True))
    status, headers, text = Client(served.url).request("/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = parse(text)
    infos = {info.queue: info for info in backend.queues()}
    assert by_label(samples, "jobdef_queue_depth") == {q: i.queued for q, i in infos.items()}
    assert by_label(samples, "jobdef_queue_depth") == {"default": 1, "reports": 4}
    assert by_label(samples, "jobdef_queue_running") == {q: i.running for q, i in infos.items()}
    ages = by_label(samples, "jobdef_queue_oldest_queued_age_seconds")
    assert set(ages) == {"default", "reports"}
    assert all(age >= 0 for age in ages.values())
    dead = {c.job: c.count for c in backend.stats() if c.state == "dead"}
    assert dead == {"ship_order": 3}
    # Every job of the sheets has a series: 0 for a job without dead rows.
    assert by_label(samples, "jobdef_jobs_dead") == {**dead, "build_report": 0}
    assert samples[("jobdef_outbox_backlog", ())] == len(backend.outbox_pending()) == 2
    assert samples[("jobdef_workers_alive", ())] == 1
    assert samples[("jobdef_workers_stale", ())] == 1
    read_at = samples[("jobdef_gauges_read_timestamp_seconds", ())]
    assert abs(read_at - backend.clock()) < 600

    # Read at a bounded rate: a scrape within the interval gets the same reading.
    queue.enqueue("build_report", {"report_id": 99})
    again = parse(Client(served.url).request("/metrics")[2])
    assert again == samples


def test_the_reading_is_cached_for_its_interval_whatever_the_scrape_rate(store_url, queue):
    now = [0.0]
    store = Store(store_url)
    try:
        cache = MetricsCache(store, seconds=15.0, monotonic=lambda: now[0])
        first = cache.text()
        queue.enqueue("build_report", {"report_id": 1})
        for step in (1.0, 5.0, 14.9):
            now[0] = step
            assert cache.text() is first
        now[0] = 15.0
        fresh = parse(cache.text())
        assert by_label(fresh, "jobdef_queue_depth") == {"reports": 1}
    finally:
        store.close()


def test_metrics_and_workers_refuse_without_credentials(sqlite_url, serve):
    auth = Auth(user="ops", password="right horse battery", token=TOKEN)
    served = serve(create_app(sqlite_url, SHEETS, auth, read_only=True))
    for headers in (
        {},
        {"Authorization": "Bearer tok-wrong"},
        {"Authorization": "Basic b3BzOndyb25n"},  # ops:wrong
    ):
        for path in ("/metrics", "/workers", "/api/workers"):
            status, _, body = Client(served.url, headers).request(path)
            assert status == 401, (headers, path)
            assert "jobdef_" not in body
            assert "worker" not in body.lower()
    # A scraper sends the bearer token; read-only mode serves /metrics.
    scraper = Client(served.url, {"Authorization": f"Bearer {TOKEN}"})
    status, headers, body = scraper.request("/metrics")
    assert status == 200
    assert parse(body)[("jobdef_outbox_backlog", ())] == 0
    assert "content-security-policy" in headers
    status, _, body = scraper.request("/workers")
    assert status == 200
    assert "No worker is registered" in body
