"""The receipt endpoint as Django views (jobdef.contrib.django.receipts) in the test
project's urls, on its SQLite and its PostgreSQL alias: a task's receipt shows what its
sheet allows, through real workers; every token that names no job gets the one 404;
the event stream ends with the job, under WSGI (Django's test client, a thread per
stream) and under ASGI (uvicorn serving the project)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from jd_support import Project, drain, unique

from jobdef.backends.waiters import job_waiters
from support import eventually
from support.receipt_probes import KEYS, NOT_FOUND, hostile_tokens

httpx = pytest.importorskip("httpx")


def _prefix(alias: str) -> str:
    return "/api" if alias == "default" else "/api-pg"


def _enqueue(alias: str, month: str = "2026-11") -> Any:
    from jdproject import tasks

    return tasks.shown.using(backend=alias).enqueue(month=month, note=f"note-{unique()}")


def _events(text: str) -> list[tuple[str, Any]]:
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


@pytest.mark.slow
def test_a_tasks_receipt_shows_what_its_sheet_allows_through_a_real_worker(
    project: Project, engine_alias: str
) -> None:
    from django.test import Client

    client = Client()
    result = _enqueue(engine_alias)
    token = result.receipt.token
    response = client.get(f"{_prefix(engine_alias)}/receipts/{token}", HTTP_ACCEPT_LANGUAGE="ja")
    assert response.status_code == 200
    assert response["cache-control"] == "no-store"
    assert response["content-language"] == "ja"
    body = response.json()
    assert set(body) == KEYS
    assert (body["state"], body["label"], body["title"]) == (
        "accepted",
        "受付済み",
        "受付番号で見える処理",
    )
    assert body["args"] == {"month": "2026-11"}

    drain(project, engine_alias)
    text = client.get(f"{_prefix(engine_alias)}/receipts/{token}").content.decode()
    body = json.loads(text)
    assert (body["state"], body["label"], body["result"]) == (
        "done",
        "Done",
        {"file": "2026-11.csv"},
    )
    for never in ("note-", "/srv/", "shown"):
        assert never not in text, never

    if engine_alias == "pg":  # each alias's views read its own store, and only it
        elsewhere = _enqueue("default").receipt.token
        for path in (f"/api/receipts/{token}", f"/api-pg/receipts/{elsewhere}"):
            missing = client.get(path)
            assert (missing.status_code, missing.content) == (404, NOT_FOUND)


def test_every_token_that_names_no_job_gets_the_same_404(
    project: Project, engine_alias: str
) -> None:
    from django.test import Client

    client = Client()
    result = _enqueue(engine_alias)
    for text in hostile_tokens(result.receipt):
        for tail in ("", "/events"):
            path = f"{_prefix(engine_alias)}/receipts/{text}{tail}"
            response = client.get(path)
            assert response.status_code == 404, path
            if "/" in text or "%2" in text.lower():
                continue  # a path Django's own urls do not match: the project's 404
            assert response.content == NOT_FOUND, path
            assert response["cache-control"] == "no-store"
            assert "access-control-allow-origin" not in response
    assert (
        client.post(f"{_prefix(engine_alias)}/receipts/{result.receipt.token}").status_code == 405
    )


def test_cors_only_for_the_origins_given(project: Project) -> None:
    from django.test import Client

    client = Client()
    token = _enqueue("default").receipt.token
    shop = client.get(f"/cors/receipts/{token}", HTTP_ORIGIN="https://shop.example")
    assert shop["access-control-allow-origin"] == "https://shop.example"
    evil = client.get(f"/cors/receipts/{token}", HTTP_ORIGIN="https://evil.example")
    assert "access-control-allow-origin" not in evil
    plain = client.get(f"/api/receipts/{token}", HTTP_ORIGIN="https://shop.example")
    assert "access-control-allow-origin" not in plain


def test_under_wsgi_a_stream_sends_each_change_and_ends_with_the_job(
    project: Project, engine_alias: str
) -> None:
    from django.test import Client

    engine = project.backend(engine_alias).engine()
    hub = job_waiters(engine.url)
    result = _enqueue(engine_alias)
    response = Client().get(f"{_prefix(engine_alias)}/receipts/{result.receipt.token}/events")
    assert response.status_code == 200
    assert response["content-type"] == "text/event-stream"
    assert response["cache-control"] == "no-store"
    chunks = iter(response.streaming_content)
    first = b""
    while b"event:" not in first:
        first += next(chunks)
    assert _events(first.decode())[0][1]["state"] == "accepted"
    cancelled = threading.Event()

    def cancel() -> None:
        eventually(lambda: hub.waiting >= 1, 30, "the stream to wait for the job's end")
        assert engine.cancel(int(result.id))
        cancelled.set()

    canceller = threading.Thread(target=cancel)
    canceller.start()
    rest = b"".join(chunks).decode()  # returns: the stream ended with the job
    canceller.join()
    assert cancelled.is_set()
    assert [(n, d["state"]) for n, d in _events(rest)] == [
        ("status", "cancelled"),
        ("end", "cancelled"),
    ]
    response.close()
    eventually(lambda: hub.waiting == 0, 30, "the stream's waiter to leave")


@pytest.mark.slow
def test_under_asgi_a_stream_sends_each_change_and_ends_with_the_job(
    project: Project, engine_alias: str
) -> None:
    from django.core.asgi import get_asgi_application

    from support.served import Served

    served = Served(get_asgi_application())
    result = _enqueue(engine_alias)
    seen: list[tuple[str, Any]] = []
    try:
        url = f"{served.url}{_prefix(engine_alias)}/receipts/{result.receipt.token}/events"
        with httpx.stream("GET", url, timeout=60) as response:
            assert response.status_code == 200
            assert response.headers["cache-control"] == "no-store"
            buffer = ""
            for chunk in response.iter_text():
                buffer += chunk
                while "\n\n" in buffer:
                    block, buffer = buffer.split("\n\n", 1)
                    for name, data in _events(block + "\n\n"):
                        seen.append((name, data))
                        if len(seen) == 1:
                            drain(project, engine_alias)
    finally:
        served.stop()
    states = [(name, data["state"]) for name, data in seen]
    assert states[0] == ("status", "accepted")
    assert states[-2:] == [("status", "done"), ("end", "done")]
    assert seen[-1][1]["result"] == {"file": "2026-11.csv"}
