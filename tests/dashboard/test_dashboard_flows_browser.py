"""A flow in a real headless Chromium, on SQLite and on PostgreSQL: a real worker
drains its first step (the next one's queue is not served) while its page is open
and follows without a reload, the flows list and the
flow's page show each step's state, a step's job page links back, and the flow's
cancel, confirmed, cancels the steps left."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from jobdef.dashboard import create_app
from jobdef.runtime import connect
from jobdef.sheets.pipeline import load_registry
from support.workers import Processes, worker_command

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "flow_sheets"


def test_a_flow_part_drained_shows_its_steps_and_cancels_from_its_page(
    page, serve, store_url: str, tmp_path: Path
) -> None:
    with connect(store_url, load_registry([SHEETS])) as queue:
        flow_id = queue.start("order_out", {"order_id": 5}).id
    dashboard = serve(create_app(store_url, SHEETS, poll_seconds=0.2))
    page.goto(f"{dashboard.url}/flows/{flow_id}")
    expect(page.locator("#step-pick .step-state")).to_have_text("queued")
    expect(page.locator("#live")).to_have_text("live")
    processes = Processes(tmp_path, importable=(HERE,))
    try:
        # Only the default queue: pick runs, and releases pack onto "packing".
        command = worker_command(store_url, SHEETS, "--burst", "--queues", "default")
        worker = processes.start("w", command)
        assert worker.process.wait(120) == 0, processes.log("w")
    finally:
        processes.close()
    # The open page follows without a reload.
    expect(page.locator("#step-pick .step-state")).to_have_text("done")
    expect(page.locator("#step-pack .step-state")).to_have_text("queued")

    page.goto(f"{dashboard.url}/")
    page.get_by_role("link", name="Flows", exact=True).click()
    row = page.locator(f'#flows tr[data-flow="{flow_id}"]')
    expect(row).to_contain_text("order_out")
    expect(row).to_contain_text("running")
    expect(row).to_contain_text("1 / 3")
    row.get_by_role("link", name=str(flow_id)).click()

    expect(page.locator("#flow-state")).to_have_text("running")
    expect(page.locator("#flow-graph > li")).to_have_count(3)  # one depth per step
    expect(page.locator("#step-pick .step-state")).to_have_text("done")
    expect(page.locator("#step-pack .step-state")).to_have_text("queued")
    expect(page.locator("#step-ship .step-state")).to_have_text("waiting")
    expect(page.locator("#step-pick")).to_contain_text("actual end +")
    expect(page.locator("#flow-late")).to_have_count(0)

    page.locator("#step-pick a").first.click()
    expect(page.locator("#job-state")).to_have_text("done")
    page.locator("#job-flow").click()

    page.locator('#flow-actions input[name="note"]').fill("customer called")
    page.locator("#cancel-flow").click()
    expect(page.locator(".question")).to_have_text(f"Cancel flow {flow_id}?")
    page.get_by_role("button", name="Cancel the flow").click()
    expect(page.locator("#outcome")).to_have_text("cancel flow: 1 of 1 changed")

    page.goto(f"{dashboard.url}/flows/{flow_id}")
    expect(page.locator("#flow-state")).to_have_text("cancelled")
    expect(page.locator("#step-pack .step-state")).to_have_text("cancelled")
    expect(page.locator("#step-ship .step-state")).to_have_text("cancelled")
    expect(page.locator("#step-pack .step-note")).to_contain_text("customer called")
    expect(page.locator("#flow-note")).to_contain_text("customer called")
    expect(page.locator("#cancel-flow")).to_have_count(0)
    expect(page.locator("#no-action")).to_be_visible()
