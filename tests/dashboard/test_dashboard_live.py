"""Live updates: PostgreSQL's change notifications reach an open page, bursts are
debounced, a lost listening session is replaced, SQLite polls, and a hidden tab
closes its event stream and catches up when shown again.

The PostgreSQL dashboards here poll once a minute: a change that shows within
seconds came by notification.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from dashboard_steps import HERE, SHEETS, SRC
from playwright.sync_api import expect

from jobdef.backends import open_backend, upgrade
from jobdef.backends.postgres.changes import ChangeListener
from jobdef.dashboard import create_app, live
from jobdef.errors import BackendError
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue, connect
from support import eventually

pytestmark = pytest.mark.slow

SLOW_POLL = 60.0


class LiveDashboard:
    """A served dashboard and its state (open streams, the listening hub)."""

    def __init__(self, served: Any, app: Any, store_url: str) -> None:
        self.url = served.url
        self.state = app.state.dashboard
        self.store_url = store_url

    def streams(self) -> int:
        return live.open_streams(self.state)

    def hub(self) -> live.Hub | None:
        return live.hub_of(self.state)

    def listening_pid(self) -> int | None:
        hub = self.hub()
        return hub.listener.backend_pid if hub is not None and hub.listening else None


@pytest.fixture
def pg_url(postgres_url: str, postgres_schema: str) -> str:
    url = f"{postgres_url}?schema={postgres_schema}"
    upgrade(url)
    return url


@pytest.fixture
def pg_queue(pg_url: str, registry: Registry) -> Iterator[Queue]:
    opened = connect(pg_url, registry)
    yield opened
    opened.close()


def _served(serve: Any, url: str, poll_seconds: float) -> LiveDashboard:
    app = create_app(url, SHEETS, poll_seconds=poll_seconds)
    return LiveDashboard(serve(app), app, url)


@pytest.fixture
def slow_dashboard(pg_url: str, serve: Any) -> LiveDashboard:
    """The dashboard of a PostgreSQL store that polls once a minute."""
    return _served(serve, pg_url, SLOW_POLL)


@pytest.fixture
def live_dashboard(store_url: str, serve: Any) -> LiveDashboard:
    """The dashboard of a store on each engine, polling once a minute: a change made
    while the tab was hidden shows on its return only through the page's ``since``."""
    return _served(serve, store_url, SLOW_POLL)


def _open_job(page: Any, dash: LiveDashboard, job_id: int, state: str) -> None:
    page.goto(f"{dash.url}/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_text(state)
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.stillTheSamePage = true")


def _jobdef(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
    return subprocess.run(
        [sys.executable, "-m", "jobdef", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class EventCounter:
    """Reads one /events stream in a thread and counts its ``change`` events."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=120)
        self.conn.request("GET", "/events")
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        self.changes = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for line in self.response:
                if line.strip() == b"event: change":
                    self.changes += 1
        except (OSError, ValueError, http.client.HTTPException):
            pass  # closed by close()

    def close(self) -> None:
        # Shut the socket down and let the reader see the end, then close.
        if self.conn.sock is not None:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(10)
        self.conn.close()


# -- PostgreSQL: notifications -----------------------------------------------------------------


def test_a_worker_s_transitions_reach_an_open_page_by_notification(
    page: Any, slow_dashboard: LiveDashboard, pg_queue: Queue, workers: Any
) -> None:
    job_id = pg_queue.enqueue("ship_order", {"order_id": 1}).id
    _open_job(page, slow_dashboard, job_id, "queued")
    workers.start(slow_dashboard.store_url)
    expect(page.locator("#job-state")).to_have_text("done", timeout=30_000)
    assert page.evaluate("window.stillTheSamePage") is True


def test_a_cli_verb_reaches_an_open_page_by_notification(
    page: Any, slow_dashboard: LiveDashboard, pg_queue: Queue
) -> None:
    job_id = pg_queue.enqueue("ship_order", {"order_id": 1}).id
    _open_job(page, slow_dashboard, job_id, "queued")
    done = _jobdef("cancel", str(job_id), "--db", slow_dashboard.store_url)
    assert done.returncode == 0, done.stderr
    expect(page.locator("#job-state")).to_have_text("cancelled", timeout=10_000)
    assert page.evaluate("window.stillTheSamePage") is True


def test_a_burst_of_transitions_sends_few_notifications_and_fewer_events(
    slow_dashboard: LiveDashboard, pg_url: str, pg_queue: Queue
) -> None:
    ids = [pg_queue.enqueue("ship_order", {"order_id": i}).id for i in range(1, 201)]
    schema = urlsplit(pg_url).query.partition("=")[2]
    heard: list[int] = []
    listener = ChangeListener(
        urlsplit(pg_url)._replace(query="").geturl(), schema, lambda: heard.append(1)
    )
    listener.start()
    counter = EventCounter(slow_dashboard.url)
    backend = open_backend(pg_url)
    try:
        eventually(lambda: listener.listening, 10, "the test's listener to listen")
        eventually(slow_dashboard.listening_pid, 10, "the dashboard to listen")
        heard.clear()
        started = time.monotonic()
        for job_id in ids:  # 200 actions, each its own transaction
            assert backend.cancel(job_id)
        elapsed = time.monotonic() - started
        eventually(lambda: counter.changes >= 1, 10, "a change event")
        time.sleep(1.5)  # what a burst still sends after its end
        # One notification per quarter second at most (plus the first and the last).
        assert 1 <= len(heard) <= elapsed / 0.25 + 3, (len(heard), elapsed)
        # One change per half second at most, however many notifications.
        assert 1 <= counter.changes <= (elapsed + 1.5) / 0.5 + 2, (counter.changes, elapsed)
    finally:
        backend.close()
        counter.close()
        listener.close()
    assert pg_queue.get(ids[-1]).state == "cancelled"


def test_a_lost_listening_session_is_replaced_and_nothing_is_missed(
    page: Any, slow_dashboard: LiveDashboard, pg_url: str, pg_queue: Queue, postgres_url: str
) -> None:
    import psycopg

    first = pg_queue.enqueue("ship_order", {"order_id": 1}).id
    second = pg_queue.enqueue("ship_order", {"order_id": 2}).id
    page.goto(slow_dashboard.url + "/jobs?state=queued")
    expect(page.locator("#jobs tbody tr[data-id]")).to_have_count(2)
    expect(page.locator("#live")).to_have_text("live")
    pid = eventually(slow_dashboard.listening_pid, 10, "the dashboard to listen")
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    backend = open_backend(pg_url)
    try:
        # Made while nobody listens: the look after listening again shows it.
        assert backend.cancel(first)
        expect(page.locator(f'#jobs tr[data-id="{first}"]')).to_have_count(0, timeout=15_000)
        again = eventually(slow_dashboard.listening_pid, 15, "the dashboard to listen again")
        assert again != pid
        # And notifications come through the new session.
        assert backend.cancel(second)
        expect(page.locator(f'#jobs tr[data-id="{second}"]')).to_have_count(0, timeout=10_000)
    finally:
        backend.close()
    assert page.evaluate("document.getElementById('live').textContent") == "live"


def test_the_streams_poll_while_no_session_listens(
    page: Any, pg_url: str, pg_queue: Queue, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: ChangeListener) -> Any:
        raise BackendError("PostgreSQL is not listening in this test")

    monkeypatch.setattr(ChangeListener, "_listen", refuse)
    dash = _served(serve, pg_url, 0.3)
    job_id = pg_queue.enqueue("ship_order", {"order_id": 1}).id
    _open_job(page, dash, job_id, "queued")
    hub = dash.hub()
    assert hub is not None
    assert not hub.listening
    with open_backend(pg_url) as backend:
        assert backend.cancel(job_id)
    expect(page.locator("#job-state")).to_have_text("cancelled", timeout=10_000)
    assert page.evaluate("window.stillTheSamePage") is True


def test_one_listening_session_serves_every_stream_and_closes_with_the_last(
    browser: Any, slow_dashboard: LiveDashboard, pg_queue: Queue, postgres_url: str
) -> None:
    job_id = pg_queue.enqueue("ship_order", {"order_id": 1}).id
    context = browser.new_context()
    try:
        tabs = [context.new_page() for _ in range(3)]
        for tab in tabs:
            _open_job(tab, slow_dashboard, job_id, "queued")
        eventually(lambda: slow_dashboard.streams() == 3, 10, "three open streams")
        hub = slow_dashboard.hub()
        assert hub is not None
        assert len(hub.subscribers) == 3
        pid = eventually(slow_dashboard.listening_pid, 10, "the dashboard to listen")
    finally:
        context.close()
    eventually(lambda: slow_dashboard.streams() == 0, 10, "every stream closed")
    assert slow_dashboard.hub() is None
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        eventually(lambda: _gone(conn, pid), 10, "the listening session to end")


def _gone(conn: Any, pid: int) -> bool:
    row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
    return bool(row[0] == 0)


# -- both engines: polling on SQLite, and the hidden tab ----------------------------------------


def test_sqlite_polls(page: Any, sqlite_url: str, serve: Any, registry: Registry) -> None:
    dash = _served(serve, sqlite_url, 0.2)
    opened = connect(sqlite_url, registry)
    try:
        job_id = opened.enqueue("ship_order", {"order_id": 1}).id
        _open_job(page, dash, job_id, "queued")
        hub = dash.hub()
        assert hub is not None
        assert isinstance(hub.listener, live.Poller)
        backend = open_backend(sqlite_url)
        try:
            assert backend.cancel(job_id)
        finally:
            backend.close()
        expect(page.locator("#job-state")).to_have_text("cancelled", timeout=10_000)
        assert page.evaluate("window.stillTheSamePage") is True
    finally:
        opened.close()


def test_one_poller_reads_the_sqlite_store_for_every_stream(
    sqlite_url: str, serve: Any, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four open streams on SQLite: while nothing changes the store is read by the
    dashboard's one poller alone (about once per poll), not once per poll per stream;
    a change reaches every stream; the poller stops with the last stream."""
    from jobdef.dashboard import views

    looks: dict[str, int] = {}
    original = views.fingerprint

    def counted(store: Any) -> Any:
        name = threading.current_thread().name
        looks[name] = looks.get(name, 0) + 1
        return original(store)

    monkeypatch.setattr(views, "fingerprint", counted)
    dash = _served(serve, sqlite_url, 0.1)
    opened = connect(sqlite_url, registry)
    counters: list[EventCounter] = []
    try:
        job_id = opened.enqueue("ship_order", {"order_id": 1}).id
        counters = [EventCounter(dash.url) for _ in range(4)]
        eventually(lambda: dash.streams() == 4, 10, "four open streams")
        hub = dash.hub()
        assert hub is not None
        assert isinstance(hub.listener, live.Poller)
        eventually(lambda: hub.listening, 10, "the poller to read the store")
        time.sleep(1.0)  # the streams' first looks, after the poller started, are done
        looks.clear()
        time.sleep(2.0)  # about 20 polls, nothing changing
        by_streams = sum(n for name, n in looks.items() if name != "jobdef-poll")
        assert looks.get("jobdef-poll", 0) >= 3, looks
        assert by_streams == 0, looks
        assert opened.backend.cancel(job_id)
        eventually(lambda: all(c.changes >= 1 for c in counters), 10, "a change on each")
    finally:
        for counter in counters:
            counter.close()
        opened.close()
    eventually(lambda: dash.hub() is None, 10, "the poller to stop with the last stream")
    poller_thread = [t for t in threading.enumerate() if t.name == "jobdef-poll"]
    eventually(lambda: not any(t.is_alive() for t in poller_thread), 10, "the poll thread to end")


HIDE = """() => {
  Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "hidden"});
  Object.defineProperty(document, "hidden", {configurable: true, get: () => true});
  document.dispatchEvent(new Event("visibilitychange"));
}"""
SHOW = """() => {
  Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "visible"});
  Object.defineProperty(document, "hidden", {configurable: true, get: () => false});
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_hidden_tab_closes_its_stream_and_catches_up_when_shown(
    page: Any, live_dashboard: LiveDashboard, queue: Queue
) -> None:
    dash = live_dashboard
    queue.enqueue("ship_order", {"order_id": 1})
    opened: list[str] = []
    page.on("request", lambda r: opened.append(r.url) if "/events" in r.url else None)
    page.goto(dash.url + "/jobs")
    expect(page.locator("#jobs tbody tr[data-id]")).to_have_count(1)
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("window.stillTheSamePage = true")
    eventually(lambda: dash.streams() == 1, 10, "the page's stream to be open")

    page.evaluate(HIDE)
    expect(page.locator("#live")).to_have_text("paused while hidden")
    eventually(lambda: dash.streams() == 0, 10, "the hidden page's stream to close")
    new = queue.enqueue("ship_order", {"order_id": 2}).id
    time.sleep(1.5)  # several polls: a stream still open would have shown it
    expect(page.locator(f'#jobs tr[data-id="{new}"]')).to_have_count(0)
    assert dash.streams() == 0

    before = len(opened)
    page.evaluate(SHOW)
    expect(page.locator(f'#jobs tr[data-id="{new}"]')).to_be_visible(timeout=10_000)
    expect(page.locator("#live")).to_have_text("live")
    assert dash.streams() == 1
    assert page.evaluate("window.stillTheSamePage") is True
    # The stream opened again names what the page showed, so the server answered at once.
    reopened = opened[before:]
    assert reopened, "the stream did not open again"
    assert reopened[0].partition("since=")[2], reopened

    # Hidden and shown again with nothing changed: the page does not fetch itself.
    eventually(lambda: dash.streams() == 1, 10, "the stream to be open")
    refreshed = page.locator("#live").get_attribute("data-refreshed")
    page.evaluate(HIDE)
    eventually(lambda: dash.streams() == 0, 10, "the hidden page's stream to close")
    page.evaluate(SHOW)
    expect(page.locator("#live")).to_have_text("live")
    time.sleep(1.5)  # longer than the page's debounce
    assert page.locator("#live").get_attribute("data-refreshed") == refreshed
