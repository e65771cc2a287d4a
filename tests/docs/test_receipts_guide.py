"""docs/guide.md's "Receipts and results", run as written: its sheet, handler, request
handler and notification receiver written where their info strings say, the request
handled, a real ``jobdef worker --burst`` run, the waiting block run, and the done
notification posted to the receiver on a real HTTP server on loopback."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from jobdef.sheets.pipeline import validate_sheets
from support import eventually
from support.served import serve_in_thread
from support.workers import worker_command, worker_env

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "guide.md"
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.slow


def section() -> str:
    text = PAGE.read_text("utf-8")
    start = text.index("## Receipts and results\n")
    return text[start : text.index("\n## ", start + 1)]


@contextlib.contextmanager
def receiving(on_notification: Any) -> Iterator[str]:
    """An HTTP server on loopback that hands each POSTed JSON body to ``on_notification``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            on_notification(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serve_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jobdef-hook"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The section's blocks that name a file, written there (the paths written)."""
    written = []
    for _lang, info, body in BLOCK.findall(section()):
        path = info.strip()
        if path:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(body, "utf-8")
            written.append(path)
    (tmp_path / "shop" / "__init__.py").touch()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield written
    for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
        module = sys.modules.pop(name)
        queue = getattr(module, "queue", None)
        if queue is not None:
            queue.close()


def test_the_sheet_of_the_section_validates_without_findings(project: list[str]) -> None:
    report = validate_sheets([Path("jobdefs")])
    assert [str(d) for d in report.diagnostics] == []


def test_the_receipts_section_runs_as_written(project: list[str], tmp_path: Path) -> None:
    assert project == [
        "jobdefs/shop.yaml",
        "shop/jobs.py",
        "shop/views.py",
        "shop/ready.py",
        "shop/receiver.py",
    ]
    from shop import ready, receiver, views

    body, code = views.request_quote(42)
    token = body["receipt"]
    assert code == 202
    assert len(token) >= 22
    assert views.request_quote(42)[0] == body  # a double click: the same job, its receipt
    assert views.quote_status(token) == ({"state": "accepted", "progress": None}, 200)
    assert views.quote_status("A" * 35)[1] == 404

    with receiving(receiver.on_notification) as url:
        command = worker_command("sqlite:///shop.db", tmp_path / "jobdefs", "--burst")
        env = worker_env(tmp_path, env={"SHOP_HOOK_URL": url})
        log = tmp_path / "worker.log"
        with log.open("wb") as out:
            worker = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=out, stderr=out)
            try:
                # Waits while the worker starts and runs the job.
                assert ready.quote_when_ready(token) == {
                    "total": 1042,
                    "currency": "JPY",
                    "pdf": "quotes/42.pdf",
                }
            finally:
                assert worker.wait(120) == 0, log.read_text(errors="replace")
        eventually(lambda: receiver.told, what="the done notification to reach the receiver")
    assert receiver.told == [f"quote {token[:8]}... is ready: 1042 yen"]
    answer, code = views.quote_status(token)
    assert (code, answer["state"], answer["total"]) == (200, "done", 1042)
    assert answer["progress"] == {"step": "pricing"}
