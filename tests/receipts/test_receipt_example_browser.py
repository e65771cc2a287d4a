"""The example of examples/receipts_app in Chromium, on each engine: the page orders a
report, shows its receipt number, and goes accepted -> running -> done as a real
worker process runs the job, without a reload; a reload with the receipt in the
fragment follows it again, and a guessed one shows nothing of any job."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import upgrade
from support.served import Served
from support.stores import ENGINES, engine_db_url
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


@pytest.fixture(params=ENGINES)
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
def page(browser: Any) -> Iterator[Any]:
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


def test_the_example_sheet_is_clean_and_run_py_serves_it_beside_a_worker(
    tmp_path: Path,
) -> None:
    """`python examples/receipts_app/run.py`, as its README says: the page, an order, the
    job done by the worker it started; Ctrl-C stops both."""
    import signal
    import socket
    import subprocess

    import httpx

    from jobdef.cli import main
    from support import eventually
    from support.workers import worker_env

    assert main(["validate", str(EXAMPLE / "jobdefs"), "--strict"]) == 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLE / "run.py"), "--db", db, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=worker_env(),
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return httpx.get(f"{base}/", timeout=5).status_code == 200
            except httpx.TransportError:
                assert process.poll() is None, log.read_text()
                return False

        eventually(up, 60, "run.py to serve the page")
        ordered = httpx.post(f"{base}/reports", json={"month": "2026-09", "seconds": 1})
        token = ordered.json()["receipt"]

        def done() -> Any:
            body = httpx.get(f"{base}/api/receipts/{token}", timeout=5).json()
            return body if body["state"] == "done" else None

        body = eventually(done, 60, "the worker run.py started to build the report")
        assert body["result"] == {"file": "report-2026-09.csv", "rows": 31}
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
    # The worker it started is gone with it: nothing of its group runs (a handler
    # process whose worker ended may wait as a zombie for init to reap it).
    assert _running_in_group(process.pid) == []


def _running_in_group(pgid: int) -> list[int]:
    """The processes of the group ``pgid`` that are not zombies."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found
