"""The example of examples/receipts_app in Chromium, on each engine: the page orders a
report, shows its receipt number, and goes accepted -> running -> done as a real
worker process runs the job, without a reload; a reload with the receipt in the
fragment follows it again, and a guessed one shows nothing of any job."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import upgrade
from support.browser import chromium
from support.served import Served
from support.stores import engine_db_url
from support.workers import Processes, worker_command

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "receipts_app"

# Every text the page's state shows, in order, recorded by the page itself.
RECORD_STATES = """() => {
  window.__seen = [];
  window.__loaded = performance.timeOrigin;
  const state = document.getElementById("state");
  new MutationObserver(() => {
    const now = state.textContent;
    if (window.__seen[window.__seen.length - 1] !== now) window.__seen.push(now);
  }).observe(state, {childList: true, characterData: true, subtree: true});
}"""


def _example_app() -> Any:
    """The example's ``app`` module, imported from its folder as run.py imports it."""
    spec = importlib.util.spec_from_file_location("receipts_example_app", EXAMPLE / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    made = engine_db_url(request, tmp_path)
    upgrade(made)
    return made


@pytest.fixture
def served(url: str) -> Iterator[Served]:
    started = Served(_example_app().create_app(url))
    yield started
    started.stop()


@pytest.fixture
def page() -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(locale="en-US")
        opened = context.new_page()
        opened.set_default_timeout(30_000)
        yield opened
        context.close()


def test_the_page_goes_accepted_running_done_without_a_reload(
    url: str, served: Served, page: Any, tmp_path: Path
) -> None:
    workers = Processes(tmp_path, importable=(EXAMPLE,), grace=10)
    try:
        page.goto(f"{served.url}/")
        page.evaluate(RECORD_STATES)
        page.fill("input[name=month]", "2026-10")
        page.fill("input[name=seconds]", "3")
        page.click("button")

        token = page.locator("#token")
        page.wait_for_function("document.getElementById('state').textContent === 'accepted'")
        assert len(token.inner_text()) == 35  # the receipt token, shown as the number
        assert page.locator("li.current").inner_text() == "accepted"
        assert page.locator("#label").inner_text() == "Accepted"
        assert page.locator("#month").inner_text() == "(2026-10)"
        # No worker yet: the job waits, accepted. Now one starts and takes it.
        workers.start("worker", worker_command(url, EXAMPLE / "jobdefs", "--lease", "10s"))
        page.wait_for_function("document.getElementById('state').textContent === 'running'")
        assert page.locator("li.current").inner_text() == "running"
        page.wait_for_function("document.getElementById('progress').textContent !== ''")
        page.wait_for_function(
            "document.getElementById('state').textContent === 'done'", timeout=60_000
        )
        assert page.locator("#result").inner_text() == "Ready: report-2026-10.csv (93 rows)"
        assert page.locator("li.reached").count() == 3
        # One page load all along: the state came over the event stream.
        assert page.evaluate("window.__seen") == ["accepted", "running", "done"]
        assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
        assert page.evaluate("window.__loaded === performance.timeOrigin")
        assert f"#{token.inner_text()}" in page.url  # in the fragment, never sent
        html = page.content()
        assert "/tmp/reports" not in html  # the result's private field

        # A reload follows the receipt in the fragment: done at once.
        page.reload()
        page.wait_for_function("document.getElementById('state').textContent === 'done'")
    finally:
        workers.close()

    # A guessed receipt: its stream is refused (the one 404) and the page shows no job.
    page.goto("about:blank")
    with page.expect_response(lambda r: r.url.endswith("/events")) as refused:
        page.goto(f"{served.url}/#{'0' * 12}{'A' * 23}")
    assert refused.value.status == 404
    assert page.locator("#state").inner_text() == ""
    assert page.locator("#result").inner_text() == ""
