"""The dead-job flow in a real headless Chromium, on SQLite and on PostgreSQL: what an
operator sees on a 1280x900 screen, the confirmation, the fatal warning, and the dead
letter's actions."""

from __future__ import annotations

import pytest
from dashboard_steps import make_dead
from playwright.sync_api import expect

from jobdef.backends.records import ErrorInfo

pytestmark = pytest.mark.slow

SCREEN = {"width": 1280, "height": 900}
# A handler's error as long as a real one often is: it wraps over a few lines.
CONNECTION = ErrorInfo(
    "ConnectionError",
    "carrier timed out: " + "POST https://carrier.example/v2/shipments gave no answer; " * 8,
    "Traceback (most recent call last):\n" + '  File "shop/ship.py", line 12\n' * 20,
)
FATAL = ErrorInfo("ValueError", "bad address; dead: ValueError is listed in errors.fatal", "")


def on_first_screen(page, selector: str) -> dict[str, float]:
    """The element's box, asserted to lie within the first 900px of the page."""
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not shown"
    assert box["y"] >= 0
    assert box["y"] + box["height"] <= SCREEN["height"], f"{selector} ends at {box}"
    return box


def test_a_dead_job_offers_requeue_then_resolve_on_the_first_screen(
    browser, dashboard, queue, backend
):
    [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 8}], CONNECTION)
    context = browser.new_context(viewport=SCREEN)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(f"{dashboard.url}/jobs/{job_id}")
        expect(page.locator("#job-state")).to_have_text("dead")
        requeue = on_first_screen(page, "#requeue")
        resolve = on_first_screen(page, "#resolve")
        on_first_screen(page, "#rerun-this")
        assert requeue["x"] < resolve["x"], "requeue comes first"
        plan = page.locator("#plan").bounding_box()
        assert plan is not None
        assert requeue["y"] + requeue["height"] <= plan["y"], "the actions sit above the plan"
        expect(page.locator("#job-actions button")).to_have_text(["Requeue", "Resolve"])
        expect(page.locator("#rerun-this")).to_have_text(f"jobdef requeue {job_id}")

        page.locator("#requeue").click()
        expect(page.locator(".question")).to_have_text(f"Requeue job {job_id}?")
        expect(page.locator("form.confirm button")).to_have_text(["Requeue"])
        expect(page.get_by_role("link", name="Back", exact=True)).to_be_visible()
        expect(page.locator("#fatal-warning")).to_have_count(0)
        page.get_by_role("button", name="Requeue").click()
        expect(page.locator("#outcome")).to_have_text("requeue: 1 of 1 changed")
        assert backend.get(job_id).state == "queued"
        page.locator("#back").click()
        expect(page.locator("#job-actions button")).to_have_text(["Cancel this job"])
    finally:
        context.close()


def test_requeueing_a_fatal_error_is_warned_and_needs_the_tick(page, dashboard, queue, backend):
    [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 9}], FATAL)
    page.goto(f"{dashboard.url}/jobs/{job_id}")
    expect(page.locator("#fatal-note")).to_contain_text("fails the same way")
    page.locator("#requeue").click()
    warning = page.locator("#fatal-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("ValueError is listed in errors.fatal")
    expect(warning).to_contain_text("fail the same way unless its cause was fixed")
    page.get_by_role("button", name="Requeue").click()  # without the tick: not sent
    expect(page.locator(".question")).to_have_text(f"Requeue job {job_id}?")
    assert backend.get(job_id).state == "dead"
    page.get_by_label("The cause is fixed: requeue anyway").check()
    page.get_by_role("button", name="Requeue").click()
    expect(page.locator("#outcome")).to_have_text("requeue: 1 of 1 changed")
    assert backend.get(job_id).state == "queued"


def test_the_dead_letter_requeues_a_group_and_resolves_a_selection(page, dashboard, queue, backend):
    lost = make_dead(backend, queue, "ship_order", [{"order_id": i} for i in (1, 2)], CONNECTION)
    [bad] = make_dead(backend, queue, "ship_order", [{"order_id": 3}], FATAL)
    [report] = make_dead(backend, queue, "build_report", [{"report_id": 1}], CONNECTION)
    page.goto(f"{dashboard.url}/dead")
    row = page.locator('.dead-group[data-job="ship_order"] tr[data-error-type="ConnectionError"]')
    row.get_by_role("button", name="Requeue").click()
    expect(page.locator(".question")).to_have_text(
        "Requeue the 2 dead ship_order jobs that raised ConnectionError?"
    )
    page.get_by_role("button", name="Requeue").click()
    expect(page.locator("#outcome")).to_have_text("requeue: 2 of 2 changed")
    assert {backend.get(i).state for i in lost} == {"queued"}

    page.locator("#back").click()
    fatal = page.locator('.dead-group[data-job="ship_order"] tr[data-error-type="ValueError"]')
    expect(fatal).to_contain_text("fatal by the sheet")
    fatal.get_by_role("checkbox").check()
    page.locator('.dead-group[data-job="build_report"] input[type="checkbox"]').check()
    page.fill('#dead-selection input[name="note"]', "address fixed by hand")
    page.locator("#resolve-selected").click()
    expect(page.locator(".question")).to_contain_text("the 1 dead ship_order job that raised")
    expect(page.locator("#fatal-warning")).to_have_count(0)  # resolving runs nothing
    page.get_by_role("button", name="Resolve").click()
    expect(page.locator("#outcome")).to_have_text("resolve: 2 of 2 changed")
    assert backend.get(bad).state == backend.get(report).state == "resolved"
    assert backend.get(bad).note.startswith("address fixed by hand (resolved by")
    page.locator("#back").click()
    expect(page.locator("#no-dead")).to_be_visible()
