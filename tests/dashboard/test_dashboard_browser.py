"""The dashboard in a real headless Chromium, on SQLite and on PostgreSQL.

Each test drives the pages as an operator would and asserts what they show;
the jobs run in real worker processes where a test says they run.
"""

from __future__ import annotations

import re
import time

import pytest
from dashboard_steps import make_dead
from playwright.sync_api import expect

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, ErrorInfo
from support import ManualClock, eventually

pytestmark = pytest.mark.slow

CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "Traceback: ...")


def confirm(page) -> str:
    """Press Confirm on the confirmation page; the outcome line it leads to."""
    page.locator("#confirm").click()
    return page.locator("#outcome").inner_text()


def test_overview_filter_and_search_by_an_arg(page, dashboard, queue, backend):
    make_dead(backend, queue, "ship_order", [{"order_id": 99}], CONNECTION)
    for order in range(1, 6):
        queue.enqueue("ship_order", {"order_id": order})
    queue.enqueue("build_report", {"report_id": 7})

    page.goto(dashboard.url + "/")
    ship = page.locator('#queues tr[data-queue="default"]')
    expect(ship.locator("td").nth(2)).to_have_text("5")
    expect(page.locator('#queues tr[data-queue="reports"] td').nth(2)).to_have_text("1")
    expect(page.locator("#backlog")).to_contain_text("1 dead job of ship_order")

    page.get_by_role("link", name="Jobs", exact=True).click()
    expect(page.locator("#jobs tbody tr")).to_have_count(7)
    page.select_option('select[name="state"]', "dead")
    page.locator("#apply").click()
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    expect(page.locator("#jobs tbody tr").first).to_contain_text("carrier timed out")

    page.goto(dashboard.url + "/jobs")
    page.fill('input[name="q"]', "args.order_id:3")
    page.locator("#apply").click()
    rows = page.locator("#jobs tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text('"order_id": 3')
    assert "q=args.order_id%3A3" in page.url


def test_job_detail_shows_attempts_on_the_planned_timeline(page, dashboard, store_url, queue):
    clock = ManualClock()
    timed = open_backend(store_url, clock=clock)
    try:
        job_id = queue.enqueue("ship_order", {"order_id": 5}).id
        clock.set(timed.get(job_id).created_at + 0.2)
        lease = ClaimOptions(worker_id="w-1", lease_seconds=60)
        [first] = timed.claim(lease)
        clock.advance(0.3)
        assert timed.retry(first.lease, CONNECTION, clock() + 1, 1.0)
        clock.advance(1.5)  # within attempt 2's window (1 s .. 6 s)
        [second] = timed.claim(lease)
        clock.advance(0.2)
        assert timed.retry(second.lease, CONNECTION, clock() + 1, 1.0)
        clock.advance(300)  # far past attempt 3's latest start (12 s)
        [third] = timed.claim(lease)
        clock.advance(0.1)
        assert timed.bury(third.lease, ErrorInfo("ValueError", "bad address", ""))
    finally:
        timed.close()

    page.goto(f"{dashboard.url}/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_text("dead")
    plan = page.locator("#plan tbody tr[data-attempt]")
    expect(plan).to_have_count(3)
    expect(plan.nth(0)).to_contain_text("+0.0s … +0.0s")
    expect(plan.nth(1)).to_contain_text("+1.0s … +6.0s")
    expect(plan.nth(1)).to_contain_text("retry")
    expect(plan.nth(2)).to_contain_text("+2.0s … +12.0s")
    expect(plan.nth(2)).to_contain_text("ValueError: bad address")
    # Only the late third attempt left the plan.
    expect(page.locator("#divergences li")).to_have_count(1)
    expect(page.locator("#divergences")).to_contain_text("attempt 3: started")
    expect(page.locator("#divergences")).to_contain_text("after its latest planned start")
    expect(page.locator("#plan tr.diverged")).to_have_count(1)
    # Each effective value names where the sheet wrote it.
    expect(page.locator("#fields")).to_contain_text(re.compile(r"sheets/jobs\.yaml:\d+"))
    expect(page.locator("svg.timeline circle")).to_have_count(3)


def test_requeue_a_dead_job_and_watch_a_worker_run_it(page, dashboard, queue, backend, workers):
    [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 8}], CONNECTION)
    workers.start(dashboard.store_url)
    page.goto(f"{dashboard.url}/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_text("dead")
    page.locator("#requeue").click()
    expect(page.locator(".question")).to_have_text(f"Requeue job {job_id}?")
    assert confirm(page) == "requeue: 1 of 1 changed"
    page.locator("#back").click()
    # The worker takes it; the page follows without a reload (server-sent events).
    expect(page.locator("#job-state")).to_have_text("done", timeout=30_000)
    expect(page.locator("#plan tbody tr[data-attempt]").last).to_contain_text("done")
    assert backend.get(job_id).state == "done"


def test_bulk_resolve_everything_matching_a_filter(page, dashboard, queue, backend):
    make_dead(backend, queue, "ship_order", [{"order_id": i} for i in range(1, 8)], CONNECTION)
    others = make_dead(backend, queue, "build_report", [{"report_id": 1}], CONNECTION)
    page.goto(f"{dashboard.url}/jobs?state=dead&job=ship_order")
    expect(page.locator("#jobs tbody tr")).to_have_count(7)
    page.locator("#bulk-resolve").click()
    expect(page.locator(".question")).to_have_text("Resolve every dead job matching the filter?")
    page.fill('input[name="note"]', "carrier refunded")
    assert confirm(page) == "resolve: 7 of 7 changed"
    page.locator("#back").click()
    expect(page.locator("#jobs tbody tr")).to_have_text(["No job matches."])
    resolved = backend.list_jobs(state="resolved")
    assert len(resolved) == 7
    assert all(
        r.note and r.note.startswith("carrier refunded (resolved by anonymous@") for r in resolved
    )
    assert backend.get(others[0]).state == "dead"


def test_pause_a_queue_and_see_a_worker_stop_taking_its_jobs(
    page, dashboard, store_url, queue, workers
):
    workers.start(store_url)
    first = queue.enqueue("build_report", {"report_id": 1}).id
    eventually(lambda: queue.get(first).state == "done", 30, "the worker to run a report")

    page.goto(dashboard.url + "/")
    row = page.locator('#queues tr[data-queue="reports"]')
    row.get_by_role("button", name="Pause").click()
    expect(page.locator(".question")).to_have_text("Pause queue reports?")
    assert confirm(page) == "pause: 1 of 1 changed"
    page.locator("#back").click()
    expect(row.locator("td").nth(1)).to_have_text("paused")

    held = queue.enqueue("build_report", {"report_id": 2}).id
    other = queue.enqueue("ship_order", {"order_id": 2}).id
    eventually(lambda: queue.get(other).state == "done", 30, "the other queue to keep running")
    time.sleep(1.0)  # many claim polls of the worker (50 ms)
    assert queue.get(held).state == "queued"
    expect(row.locator("td").nth(2)).to_have_text("1")

    row.get_by_role("button", name="Resume").click()
    assert confirm(page) == "resume: 1 of 1 changed"
    eventually(lambda: queue.get(held).state == "done", 30, "the resumed queue's job to run")


def test_a_new_job_appears_without_a_reload(page, dashboard, queue):
    queue.enqueue("ship_order", {"order_id": 1})
    page.goto(dashboard.url + "/jobs")
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.stillTheSamePage = true")
    new = queue.enqueue("ship_order", {"order_id": 2}).id
    expect(page.locator(f'#jobs tr[data-id="{new}"]')).to_be_visible(timeout=15_000)
    assert page.evaluate("window.stillTheSamePage") is True
