"""The workers page in a real headless Chromium, on SQLite and on PostgreSQL: reached
from the navigation, it shows a real worker process and links to the job it runs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect
from workers_steps import WORKERS_SHEETS, HeldWorker, held_worker

from jobdef.dashboard import create_app

pytestmark = pytest.mark.slow


@pytest.fixture
def held(store_url: str, tmp_path: Path) -> Iterator[HeldWorker]:
    yield from held_worker(store_url, tmp_path)


def test_the_workers_page_shows_a_worker_and_links_to_its_running_job(page, serve, store_url, held):
    served = serve(create_app(store_url, WORKERS_SHEETS, poll_seconds=0.2))
    job_id = held.start()

    page.goto(served.url + "/")
    page.get_by_role("link", name="Workers", exact=True).click()
    expect(page).to_have_url(re.compile(r"/workers$"))
    expect(page.locator("h1")).to_have_text("Workers")
    row = page.locator("#workers tbody tr").filter(has_text=str(held.pid))
    # Opened before the worker may have taken the job: the live update brings it in.
    link = row.get_by_role("link", name=str(job_id), exact=True)
    expect(link).to_be_visible(timeout=30_000)
    expect(row.locator("td.state")).to_have_text("alive")
    expect(row.locator("td").nth(4)).to_have_text("all queues")

    link.click()
    expect(page).to_have_url(re.compile(rf"/jobs/{job_id}$"))
    expect(page.locator("#job-title")).to_contain_text(f"#{job_id} hold")
    expect(page.locator("#job-state")).to_have_text("running")
