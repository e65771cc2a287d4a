"""The receipt endpoint as an ASGI app (jobdef.contrib.receipts), served by uvicorn over a
real store on each engine: what a receipt shows in each state, and nothing more; the
one 404 for every token that names no job (guessed, pruned, malformed, huge) and for
every other path; another job's data never shows; no-store; CORS only when asked;
the event stream sends each change and ends with the job, with a real worker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from receipt_steps import HERE, SHEETS, claim, fail, finish

from jobdef.backends import upgrade
from jobdef.backends.records import RetentionRule
from jobdef.backends.waiters import job_waiters
from jobdef.contrib.receipts import receipt_app
from jobdef.runtime.queue import Queue, connect
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.receipt_probes import KEYS, NOT_FOUND, hostile_paths
from support.served import Served
from support.stores import ENGINES, engine_db_url
from support.workers import Processes, worker_command


@pytest.fixture(params=ENGINES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    made = engine_db_url(request, tmp_path)
    upgrade(made)
    return made


@pytest.fixture
def queue(url: str) -> Iterator[Queue]:
    opened = connect(url, load_registry([SHEETS]))
    yield opened
    opened.close()


@pytest.fixture
def served(queue: Queue) -> Iterator[Served]:
    started = Served(receipt_app(queue, look_seconds=0.1))
    yield started
    started.stop()


@pytest.fixture
def client(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=30) as opened:
        yield opened


def _get(client: httpx.Client, token: str, **headers: str) -> dict[str, Any]:
    response = client.get(f"/receipts/{token}", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert set(body) == KEYS
    return body


def test_a_receipt_shows_its_state_title_public_args_and_public_result_fields(
    queue: Queue, client: httpx.Client
) -> None:
    receipt = queue.enqueue(
        "export", {"month": "2026-11", "note": "call Ms. Ueda", "api_token": "tk-live-123"}
    )
    accepted = _get(client, receipt.token)
    assert accepted["state"] == "accepted"
    assert accepted["ended"] is False
    assert accepted["label"] == "Accepted"
    assert accepted["title"] == "予約一覧CSV出力"
    assert (accepted["attempts"], accepted["max_attempts"]) == (0, 1)
    # Only the arg whose schema says public: true.
    assert accepted["args"] == {"month": "2026-11"}
    assert accepted["result"] is None

    record = claim(queue, receipt.job_id)
    assert queue.backend.heartbeat(record.lease, 60, {"done": 1, "of": 3})
    running = _get(client, receipt.token)
    assert (running["state"], running["attempts"]) == ("running", 1)
    assert running["progress"] == {"done": 1, "of": 3}
    assert running["started_at"] is not None

    finish(queue, record, {"file": "2026-11.csv", "rows": 3, "path": "/srv/exports/x"})
    done = _get(client, receipt.token)
    assert (done["state"], done["ended"], done["label"]) == ("done", True, "Done")
    # The named fields, not the rest of the value.
    assert done["result"] == {"file": "2026-11.csv", "rows": 3}
    assert done["finished_at"] is not None
    text = client.get(f"/receipts/{receipt.token}").text
    # Nor the job's id, name in code, queue or worker (KEYS holds none of them).
    for never in ("call Ms. Ueda", "tk-live-123", "/srv/exports", "export", "test-worker"):
        assert never not in text, never


def test_the_sheet_decides_whether_the_result_shows_whole_or_not_at_all(
    queue: Queue, client: httpx.Client
) -> None:
    whole = queue.enqueue("whole", {"count": 4})
    finish(queue, claim(queue, whole.job_id), {"count": 4, "square": 16})
    assert _get(client, whole.token)["result"] == {"count": 4, "square": 16}

    hidden = queue.enqueue("hidden", {"count": 5})
    finish(queue, claim(queue, hidden.job_id), {"count": 5, "square": 25})
    body = _get(client, hidden.token)
    assert (body["state"], body["result"], body["args"]) == ("done", None, {})
    assert "square" not in json.dumps(body)


def test_a_retry_and_a_dead_job_show_the_state_and_never_the_error(
    queue: Queue, client: httpx.Client
) -> None:
    retried = queue.enqueue("retried", {"count": 1})
    fail(queue, claim(queue, retried.job_id), retry=True)
    body = _get(client, retried.token)
    assert body["state"] == "retry_waiting"
    assert body["next_start"] == pytest.approx(queue.backend.clock() + 3600, abs=60)
    assert body["attempts"] == 1

    dead = queue.enqueue("hidden", {"count": 2})
    fail(queue, claim(queue, dead.job_id), retry=False)
    body = _get(client, dead.token, **{"accept-language": "ja"})
    assert (body["state"], body["ended"], body["label"]) == ("dead", True, "処理できませんでした")
    for token in (retried.token, dead.token):
        text = client.get(f"/receipts/{token}").text
        for never in ("LedgerLocked", "billing", "ledger", "secret", "Traceback", "/srv"):
            assert never not in text, never


def test_every_token_that_names_no_job_and_every_other_path_gets_the_same_404(
    queue: Queue, client: httpx.Client
) -> None:
    pruned = queue.enqueue("whole", {"count": 8})
    finish(queue, claim(queue, pruned.job_id), {"count": 8, "square": 64})
    receipt = queue.enqueue("whole", {"count": 7})
    pruned_token = pruned.token
    assert queue.backend.prune([RetentionRule("whole", done=0.0, dead=None)]) == 1
    assert queue.status(pruned_token) is None

    paths = [f"/receipts/{pruned_token}", f"/receipts/{pruned_token}/events"]
    for path in hostile_paths(receipt):
        paths += [path, f"{path}/events"]
    answers = set()
    for path in paths:
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.content == NOT_FOUND, path
        assert response.headers["cache-control"] == "no-store", path
        assert "access-control-allow-origin" not in response.headers
        answers.add((response.content, response.headers["content-type"]))
    assert len(answers) == 1
    # The job itself is still there, and shown only by its own token.
    assert _get(client, receipt.token)["state"] == "accepted"


def test_no_request_shows_another_jobs_data(queue: Queue, client: httpx.Client) -> None:
    mine = queue.enqueue("export", {"month": "2026-01", "note": "n", "api_token": "t"})
    other = queue.enqueue("export", {"month": "1999-12", "note": "theirs", "api_token": "x"})
    finish(queue, claim(queue, mine.job_id), {"file": "MINE.csv", "rows": 1, "path": "p"})
    record = claim(queue, other.job_id)
    finish(queue, record, {"file": "THEIRS.csv", "rows": 99, "path": "q"})
    seen = []
    for path in [
        f"/receipts/{mine.token}",
        f"/receipts/{mine.token}?token={other.token}",
        f"/receipts/{mine.token}?id={other.job_id}&job_id={other.job_id}",
        f"/receipts/{mine.token}/events",
        *hostile_paths(mine),
    ]:
        headers = {"cookie": f"receipt={other.token}", "x-receipt": other.token}
        if path.endswith("/events"):
            with client.stream("GET", path, headers=headers) as response:
                seen.append(response.read().decode())
        else:
            seen.append(client.get(path, headers=headers).text)
    for text in seen:
        for theirs in ("1999-12", "THEIRS", other.token):
            assert theirs not in text
    assert "MINE.csv" in seen[0]


def test_the_label_follows_accept_language(queue: Queue, client: httpx.Client) -> None:
    receipt = queue.enqueue("whole", {"count": 1})
    cases = {
        "ja": ("ja", "受付済み"),
        "ja-JP,ja;q=0.9,en;q=0.8": ("ja", "受付済み"),
        "en-US,en;q=0.9,ja;q=0.8": ("en", "Accepted"),
        "fr-CH, fr;q=0.9, ja;q=0.5, *;q=0.1": ("ja", "受付済み"),
        "fr": ("en", "Accepted"),
        "ja;q=0": ("en", "Accepted"),
        "ja;q=abc, en;q=0.1": ("en", "Accepted"),
        ";;;,,,q=": ("en", "Accepted"),
        "ja;q=" + "9" * 5000: ("en", "Accepted"),
    }
    for header, (lang, label) in cases.items():
        response = client.get(f"/receipts/{receipt.token}", headers={"accept-language": header})
        body = response.json()
        assert (body["lang"], body["label"]) == (lang, label), header
        assert response.headers["content-language"] == lang
        assert "accept-language" in response.headers["vary"].lower()
    # The sheet's one title, as written, in every language.
    assert body["title"] == "A result shown whole"


def test_cors_is_off_unless_origins_are_given(queue: Queue, client: httpx.Client) -> None:
    receipt = queue.enqueue("whole", {"count": 2})
    page = {"origin": "https://shop.example"}
    assert (
        "access-control-allow-origin"
        not in client.get(f"/receipts/{receipt.token}", headers=page).headers
    )

    allowing = Served(receipt_app(queue, allow_origins=["https://shop.example"]))
    try:
        with httpx.Client(base_url=allowing.url, timeout=30) as other:
            given = other.get(f"/receipts/{receipt.token}", headers=page)
            assert given.headers["access-control-allow-origin"] == "https://shop.example"
            assert "origin" in given.headers["vary"].lower()
            stranger = {"origin": "https://evil.example"}
            refused = other.get(f"/receipts/{receipt.token}", headers=stranger)
            assert refused.status_code == 200  # the browser keeps it from the page
            assert "access-control-allow-origin" not in refused.headers
            preflight = other.options(
                f"/receipts/{receipt.token}",
                headers={**page, "access-control-request-method": "GET"},
            )
            assert preflight.status_code == 204
            assert preflight.headers["access-control-allow-methods"] == "GET"
            missing = other.get("/receipts/" + "A" * 35, headers=page)
            assert missing.content == NOT_FOUND
            assert missing.headers["access-control-allow-origin"] == "https://shop.example"
            assert other.post(f"/receipts/{receipt.token}").status_code == 405
    finally:
        allowing.stop()


def _events(text: str) -> list[tuple[str, Any]]:
    """The (event, data) pairs of an event stream's text."""
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


def _read_events(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    buffer = ""
    for chunk in response.iter_text():
        buffer += chunk
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            yield from _events(block + "\n\n")


@pytest.mark.slow
def test_the_event_stream_sends_each_change_and_ends_when_the_job_ends(
    url: str, queue: Queue, client: httpx.Client, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    receipt = queue.enqueue("gated", {"path": str(gate)})
    workers = Processes(tmp_path, importable=(HERE,))
    seen: list[tuple[str, Any]] = []
    try:
        with client.stream("GET", f"/receipts/{receipt.token}/events") as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-store"
            for name, data in _read_events(response):
                seen.append((name, data))
                if data["state"] == "accepted" and len(seen) == 1:
                    workers.start("worker", worker_command(url, SHEETS, "--lease", "5s"))
                if data["state"] == "running" and data["progress"] and not gate.exists():
                    gate.touch()
            # The loop ended: the server closed the stream after the job's end.
    finally:
        workers.close()
    states = [(name, data["state"]) for name, data in seen]
    assert states[0] == ("status", "accepted")
    assert ("status", "running") in states
    assert states[-2:] == [("status", "done"), ("end", "done")]
    assert seen[-1][1]["result"] == {"opened": True}
    assert [s for _, s in states] == sorted(
        (s for _, s in states), key=["accepted", "running", "done"].index
    )


def test_a_stream_of_an_ended_job_sends_its_state_and_ends(
    queue: Queue, client: httpx.Client
) -> None:
    receipt = queue.enqueue("whole", {"count": 3})
    finish(queue, claim(queue, receipt.job_id), {"count": 3, "square": 9})
    with client.stream("GET", f"/receipts/{receipt.token}/events") as response:
        text = response.read().decode()
    assert text.startswith("retry: ")
    assert [name for name, _ in _events(text)] == ["status", "end"]
    assert _events(text)[-1][1]["result"] == {"count": 3, "square": 9}


def test_a_cancelled_job_ends_its_stream_and_a_closed_stream_stops_waiting(
    url: str, queue: Queue, client: httpx.Client
) -> None:
    hub = job_waiters(url)
    receipt = queue.enqueue("whole", {"count": 5})
    with client.stream("GET", f"/receipts/{receipt.token}/events") as response:
        events = _read_events(response)
        assert next(events)[1]["state"] == "accepted"
        eventually(lambda: hub.waiting >= 1, 30, "the stream to wait for the job's end")
        assert queue.backend.cancel(receipt.job_id)
        rest = list(events)
    assert [(name, data["state"]) for name, data in rest] == [
        ("status", "cancelled"),
        ("end", "cancelled"),
    ]
    eventually(lambda: hub.waiting == 0, 30, "the stream's waiter to leave")

    other = queue.enqueue("whole", {"count": 6})
    with client.stream("GET", f"/receipts/{other.token}/events") as response:
        events = _read_events(response)
        assert next(events)[1]["state"] == "accepted"
        eventually(lambda: hub.waiting >= 1, 30, "the stream to wait for the job's end")
    # The browser went away before the job ended: its waiter is taken off.
    eventually(lambda: hub.waiting == 0, 30, "a closed stream's waiter to leave")


@pytest.mark.slow  # the request rides out the store's 30 s reconnect window first
def test_a_store_out_of_reach_is_a_503_and_an_open_stream_waits_it_out(
    postgres_url: str, postgres_schema: str
) -> None:
    """PostgreSQL restarting (a proxy cut): a request gets 503 with one line of JSON and
    nothing of the error; an open stream sends no error and goes on once it is back."""
    from support.proxy import CuttableProxy

    direct = f"{postgres_url}?schema={postgres_schema}"
    upgrade(direct)
    proxy = CuttableProxy(("127.0.0.1", 5432))
    proxied = connect(proxy.url(direct), load_registry([SHEETS]))
    writer = connect(direct, load_registry([SHEETS]))
    served = Served(receipt_app(proxied, look_seconds=0.1))
    try:
        receipt = writer.enqueue("whole", {"count": 9})
        with httpx.Client(base_url=served.url, timeout=30) as client:
            assert _get(client, receipt.token)["state"] == "accepted"
            with client.stream("GET", f"/receipts/{receipt.token}/events") as response:
                events = _read_events(response)
                assert next(events)[1]["state"] == "accepted"
                proxy.cut()
                refused = client.get(f"/receipts/{receipt.token}")
                assert refused.status_code == 503
                assert refused.content == b'{"error":"unavailable"}'
                assert refused.headers["cache-control"] == "no-store"
                proxy.restore()
                assert writer.backend.cancel(receipt.job_id)
                rest = [(name, data["state"]) for name, data in events]
            assert rest == [("status", "cancelled"), ("end", "cancelled")]
            assert _get(client, receipt.token)["state"] == "cancelled"
    finally:
        served.stop()
        proxied.close()
        writer.close()
        proxy.close()
