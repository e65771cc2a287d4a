"""The dashboard shows a sensitive arg as ***, on its pages and in /api, and names a
webhook by its origin alone, whatever the receiver quoted back; it refuses to search
jobs by a sensitive arg (each answer would tell one guess).

A real ``jobdef worker --burst`` runs a job that dies; its notification goes to a
receiver on loopback that refuses it with a body quoting the path, as chat receivers
answer an unknown hook. The dashboard is served over HTTP on each engine.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from dashboard_steps import HERE, Client

from jobdef.dashboard import create_app
from jobdef.runtime import connect
from jobdef.sheets.pipeline import load_registry
from support.served import serve_in_thread
from support.workers import Processes, worker_command

HOOK_ENV = "DASH_SECRET_HOOK_URL"
PASSWORD = "Hunter2-correct-horse"
API_KEY = "ak-0123456789abcdef"
TEAM, BOT, TOKEN = "T0SECRET1", "B0SECRET2", "XySecretToken9abcDEF"
HOOK_PATH = f"/services/{TEAM}/{BOT}/{TOKEN}"
SECRETS = (PASSWORD, API_KEY, HOOK_PATH, TEAM, BOT, TOKEN)


class QuotingReceiver:
    """Refuses every POST with 404 and a body that quotes the path it was sent to."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = f"no such hook {self.path}".encode()
                self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        serve_in_thread(self.server)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[QuotingReceiver]:
    started = QuotingReceiver()
    yield started
    started.close()


def write_sheets(folder: Path) -> Path:
    folder.mkdir()
    (folder / "jobs.yaml").write_text(
        textwrap.dedent(
            f"""\
            apiVersion: jobdef/v1
            kind: Channel
            name: chat
            type: webhook
            url_env: {HOOK_ENV}
            timeout: 5s
            ---
            apiVersion: jobdef/v1
            kind: Job
            name: sign_in
            handler: dash_handlers:refuse_sign_in
            args:
              user: {{type: string}}
              password: {{type: string, sensitive: true}}
              profile: {{type: object}}
            max_attempts: 1
            timeout: 30s
            errors: {{default: fatal}}
            notify: {{channel: chat, events: [dead], key_args: [user, password]}}
            """
        ),
        encoding="utf-8",
    )
    return folder


@pytest.mark.slow
def test_pages_and_api_never_show_a_sensitive_arg_or_the_webhook_path(
    store_url: str, serve: Any, receiver: QuotingReceiver, tmp_path: Path
) -> None:
    sheets = write_sheets(tmp_path / "sheets")
    queue = connect(store_url, load_registry([sheets]))
    args = {"user": "ann", "password": PASSWORD, "profile": {"name": "Ann", "api_key": API_KEY}}
    job_id = queue.enqueue("sign_in", args).id
    queue.close()
    processes = Processes(tmp_path, importable=(HERE,), grace=10)
    try:
        command = worker_command(store_url, sheets, "--burst")
        worker = processes.start("worker", command, env={HOOK_ENV: receiver.origin + HOOK_PATH})
        assert worker.process.wait(60) == 0, worker.log()
    finally:
        processes.close()

    client = Client(serve(create_app(store_url, sheets, poll_seconds=0.2)).url)
    pages = {}
    for path in ("/jobs", f"/jobs/{job_id}", "/outbox", "/dead"):
        for shown in (path, "/api" + path):
            status, _, body = client.request(shown)
            assert status == 200, (shown, body)
            pages[shown] = body
            for secret in SECRETS:
                assert secret not in body, f"{shown} shows {secret!r}"
    for path in ("/jobs", "/api/jobs", f"/jobs/{job_id}", f"/api/jobs/{job_id}"):
        assert "***" in pages[path], path
        assert "Ann" in pages[path]  # what is not secret is shown
    for path in ("/outbox", "/api/outbox"):
        assert f"webhook {receiver.origin} answered HTTP 404" in pages[path]
        assert "no such hook ***" in pages[path]
    assert "sensitive" in pages[f"/jobs/{job_id}"]  # the sheet's fields say which args hide

    # A search by the sensitive arg is one line, not an answer; by another arg it finds.
    for path in ("/jobs", "/api/jobs"):
        for key, value in (("password", PASSWORD), ("profile.api_key", API_KEY)):
            status, _, body = client.request(f"{path}?q=args.{key}%3A{value}")
            assert status == 400, body
            assert f"args.{key} is sensitive, so jobs are not searched by it" in body
    status, _, body = client.request("/api/jobs?q=args.user%3Aann")
    assert status == 200
    assert f'"id": {job_id}' in body or f'"id":{job_id}' in body
