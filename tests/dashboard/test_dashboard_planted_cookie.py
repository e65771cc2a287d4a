"""Hostile pages in real Chromium: one on another port of the dashboard's host, and
one whose name was rebound to 127.0.0.1.

Cookies are scoped to a host, not a port, and ``127.0.0.1:9999`` is the same
*site* as ``127.0.0.1:8484``: a page there can set any cookie the dashboard
receives, and its form posts carry ``SameSite=Strict`` cookies along. So it can
plant a CSRF cookie of its choosing, or flood the cookie jar until the
dashboard's own are evicted and every request carries hundreds of kilobytes of
cookies. Neither may move a job, and neither may stop the operator's next action.
A rebound name reaches the dashboard's port with its own name as Host, and reads
nothing.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import pytest
from dashboard_process import dashboard_process
from dashboard_steps import SHEETS, make_dead
from playwright.sync_api import expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from jobdef.backends.records import ErrorInfo
from jobdef.dashboard import create_app
from support import eventually

pytestmark = pytest.mark.slow

CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "")
# More cookies than Chromium keeps for one host: the oldest are evicted.
FLOOD = 200


def attacker(body: Callable[[Request], str]) -> Starlette:
    """A page of another port that runs its inline script (no policy forbids it there)."""

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(f"<!doctype html><html><body>{body(request)}</body></html>")

    return Starlette(routes=[Route("/", page)])


def planting_form(target: str, job_id: int, token: str, flood: int = 0, size: int = 0) -> str:
    """Set ``flood`` cookies of ``size`` characters for the host (the jar keeps about 170,
    so the oldest are evicted), then ``jobdef_csrf=<token>``, and post a requeue
    repeating it."""
    return f"""
<form id="attack" method="post" action="{html.escape(target)}/actions/jobs">
  <input name="action" value="requeue"><input name="ids" value="{job_id}">
  <input name="confirm" value="yes"><input name="csrf" value="{token}">
</form>
<script>
  for (let i = 0; i < {flood}; i++) {{
    document.cookie = "flood" + i + "=" + "x".repeat({size}) + "; path=/";
  }}
  document.cookie = "jobdef_csrf={token}; path=/";
  document.getElementById("attack").submit();
</script>"""


def test_a_planted_csrf_cookie_and_an_auto_posted_form_move_nothing(
    browser, serve, sqlite_url, registry
):
    from jobdef.backends import open_backend
    from jobdef.runtime.queue import connect

    backend = open_backend(sqlite_url)
    queue = connect(sqlite_url, registry)
    try:
        [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
        dashboard = serve(create_app(sqlite_url, SHEETS))
        hostile = serve(attacker(lambda r: planting_form(dashboard.url, job_id, "planted-value")))
        context = browser.new_context()
        try:
            page = context.new_page()  # an operator who has not opened the dashboard yet
            with page.expect_navigation(url=f"{dashboard.url}/actions/jobs"):
                page.goto(hostile.url + "/")
            # Chromium sent the planted cookie along (same site, another port) ...
            cookies = {c["name"]: c["value"] for c in context.cookies(dashboard.url)}
            assert cookies.get("jobdef_csrf") == "planted-value"
            # ... and the dashboard refused the post all the same.
            text = page.locator("body").inner_text()
            assert text.startswith("the form was posted from another site"), text
            assert backend.get(job_id).state == "dead"
        finally:
            context.close()
    finally:
        queue.close()
        backend.close()


@pytest.fixture
def two_dead(sqlite_url, registry):
    """A store with two dead jobs: the store's URL, a backend on it, their ids."""
    from jobdef.backends import open_backend
    from jobdef.runtime.queue import connect

    backend = open_backend(sqlite_url)
    queue = connect(sqlite_url, registry)
    try:
        ids = make_dead(
            backend, queue, "ship_order", [{"order_id": 1}, {"order_id": 2}], CONNECTION
        )
        yield sqlite_url, backend, ids
    finally:
        queue.close()
        backend.close()


@pytest.mark.parametrize("size", [40, 4000], ids=["evicting", "bombing"])
def test_a_flooded_cookie_jar_neither_stops_the_operator_nor_lets_a_planted_token_in(
    browser, serve, tmp_path, two_dead, size
):
    """The operator has a job's page of ``jobdef dashboard`` open; a page of another port
    floods the jar with 200 cookies for the host, which evicts whatever the dashboard
    set there (with 4 KB ones Chromium also sends about 680 KB of cookies with every
    request), then plants its own CSRF cookie and posts. Its post moves nothing; the
    operator's Requeue and Confirm still work."""
    store, backend, [mine, theirs] = two_dead
    with dashboard_process(store, tmp_path) as url:
        hostile = serve(attacker(lambda r: planting_form(url, theirs, "planted", FLOOD, size)))
        context = browser.new_context()
        try:
            operator = context.new_page()
            operator.set_default_timeout(15_000)
            operator.goto(f"{url}/jobs/{mine}")
            expect(operator.locator("#job-state")).to_have_text("dead")

            page = context.new_page()
            with page.expect_navigation(url=f"{url}/actions/jobs"):
                page.goto(hostile.url + "/")
            # The jar is full of the flood: Chromium stores what a page sets a moment after
            # the script ran, so a post may leave before the last of it is counted.
            eventually(
                lambda: len(context.cookies(url)) >= 150, timeout=15, what="150 flooded cookies"
            )
            assert "the form was posted from another site" in page.locator("body").inner_text()
            assert backend.get(theirs).state == "dead"

            operator.locator("#requeue").click()
            expect(operator.locator(".question")).to_have_text(f"Requeue job {mine}?")
            operator.locator("#confirm").click()
            expect(operator.locator("#outcome")).to_have_text("requeue: 1 of 1 changed")
            assert backend.get(mine).state == "queued"
            assert backend.get(theirs).state == "dead"
        finally:
            context.close()


def test_a_name_rebound_to_loopback_reads_nothing_in_chromium(browser, serve, sqlite_url, registry):
    """Chromium told that rebind.attacker.test is 127.0.0.1 (what a DNS rebinding
    achieves once the attacker's page is loaded): what it then reads from the
    dashboard's port under that name is the one refusal line, never a job."""
    from jobdef.backends import open_backend
    from jobdef.runtime.queue import connect
    from support.browser import CHROMIUM, CHROMIUM_ARGS

    backend = open_backend(sqlite_url)
    queue = connect(sqlite_url, registry)
    try:
        [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 515151}], CONNECTION)
    finally:
        queue.close()
        backend.close()
    dashboard = serve(create_app(sqlite_url, SHEETS))
    port = dashboard.url.rsplit(":", 1)[1]
    rules = "--host-resolver-rules=MAP rebind.attacker.test 127.0.0.1"
    # A Chromium of its own (the rule is a launch flag), from the module's Playwright.
    rebound = browser.browser_type.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, rules])
    try:
        page = rebound.new_page()
        response = page.goto(f"http://rebind.attacker.test:{port}/api/jobs/{job_id}")
        assert response is not None
        assert response.status == 400
        text = page.locator("body").inner_text()
        assert text.startswith("host 'rebind.attacker.test' is not one this dashboard serves")
        # The page's own script, same origin as the rebound name, reads no more.
        seen = page.evaluate(
            """async () => {
                const read = await fetch("/api/jobs");
                const post = await fetch("/actions/jobs", {method: "POST",
                    headers: {"content-type": "application/x-www-form-urlencoded"},
                    body: "action=requeue&ids=1&confirm=yes&csrf=x"});
                return [read.status, await read.text(), post.status];
            }"""
        )
        assert seen[0] == 400
        assert "515151" not in seen[1]
        assert seen[2] == 400
    finally:
        rebound.close()
