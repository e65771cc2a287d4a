"""Real jobs carry hostile text and secrets; nothing printed, logged or stored shows a secret.

Jobs are enqueued with ``jobdef enqueue`` and run by a real ``jobdef worker
--burst`` process. Each handler reports its arg as progress (a JSON object and
a bare string) and then fails with a message holding that arg, a database URL
with a password, a URL with ``token=`` and ``password=`` parameters, and the
repr of its Context. The dead jobs' notifications go to a webhook receiver on
127.0.0.1 that answers 500 with the request's own URL and headers, so a sender
that quoted the receiver's answer would store the Authorization header (read
from a ``*_env`` variable with a trailing newline) and the URL's token.

Afterwards every command output, the worker's log, every row of every table
(jobs, attempts, outbox and the rest) is searched for each secret.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostile_project import (
    DB_PASSWORD,
    HOOK_TOKEN,
    SECRETS,
    URL_TOKEN,
    hostile_env,
    leaked,
    run_jobdef,
    stored_rows,
    write_project,
)
from jobdef.backends.records import ErrorInfo
from support.served import serve_in_thread

pytestmark = pytest.mark.slow


class EchoingReceiver:
    """A webhook receiver that answers 500 with the request's URL and headers as its body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests.append(dict(self.headers))
                body = f"rejected {self.path} with headers {dict(self.headers)}".encode()
                self.send_response(500)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        serve_in_thread(self.server)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[EchoingReceiver]:
    server = EchoingReceiver()
    yield server
    server.stop()


TEXTS = [
    "\x1b[2J\x1b[31mowned\x1b[0m",
    "\u202efdp.exe\u2066",
    "\x9b1m\x07\r\n",
    "日本語の引数" * 50,
    "A" * 70_000,  # past the 64 KiB cut of error messages
    "\ufffd\x00NUL",
]


def run_jobs(root: Path, texts: list[str], env: dict[str, str]) -> list[str]:
    """Enqueue one job per text, run them with ``jobdef worker --burst``; what was printed.

    ``jobs --format json`` comes last: it shows each handler's own traceback, as data.
    """
    outputs: list[str] = []
    upgrade = run_jobdef(["db", "upgrade"], root, env)
    assert upgrade.returncode == 0, upgrade.stderr
    for text in texts:
        args = json.dumps({"text": text})
        enqueued = run_jobdef(["enqueue", "hostile", "--args", args[:120_000]], root, env)
        outputs += [enqueued.stdout.decode(), enqueued.stderr.decode()]
        assert enqueued.returncode in (0, 2), enqueued.stderr  # 2: args refused with one line
    worker = run_jobdef(["worker", "--burst", "--poll", "50ms"], root, env, timeout=120)
    outputs += [worker.stdout.decode(), worker.stderr.decode()]
    assert worker.returncode == 0, worker.stderr[-3000:]
    for argv in (["status"], ["jobs"], ["jobs", "show", "1"]):
        shown = run_jobdef(argv, root, env)
        assert shown.returncode in (0, 2), shown.stderr  # 2: no job 1 when its args were refused
        outputs += [shown.stdout.decode(), shown.stderr.decode()]
    notify = run_jobdef(["notify", "test", "ops"], root, env)
    assert notify.returncode == 1, notify.stderr  # the receiver answers 500
    as_json = run_jobdef(["jobs", "--format", "json"], root, env)
    assert as_json.returncode == 0, as_json.stderr
    return [*outputs, notify.stdout.decode(), notify.stderr.decode(), as_json.stdout.decode()]


def test_an_error_record_holds_no_password_or_token_of_a_url_it_quotes() -> None:
    message = f"cannot reach postgresql://app:{DB_PASSWORD}@db/app?token={URL_TOKEN}"
    error = ErrorInfo("RuntimeError", message, f"Traceback ...\nRuntimeError: {message}")
    assert not leaked([error.message, error.traceback])
    assert error.message == "cannot reach postgresql://app:***@db/app?token=***"


def test_no_secret_in_any_output_log_stored_error_or_outbox_row(
    tmp_path: Path, receiver: EchoingReceiver
) -> None:
    root = write_project(tmp_path)
    env = hostile_env(root, hook_url=receiver.url)
    outputs = run_jobs(root, TEXTS, env)

    # The secrets did travel: the worker's handlers and the receiver saw them.
    assert any(h.get("Authorization") == f"Bearer {HOOK_TOKEN}" for h in receiver.requests)
    rows = stored_rows(root / "jobs.db")
    assert any("RuntimeError" in row for row in rows)
    assert any("HTTP 500" in row for row in rows), "the failed deliveries are stored"

    everything = outputs + rows
    assert not leaked(everything), leaked(everything)
    assert "Traceback" not in "\n".join(outputs[:-1])
    # The pieces a secret could be cut to are not there either.
    joined = "\n".join(everything)
    assert not [s[:10] for s in SECRETS if s[:10] in joined]


@settings(deadline=None, max_examples=int(os.environ.get("JOBDEF_HOSTILE_JOB_EXAMPLES", "3")))
@given(
    texts=st.lists(
        st.one_of(
            st.text(max_size=40),
            st.binary(max_size=40).map(lambda b: b.decode("utf-8", "surrogateescape")),
            st.sampled_from(TEXTS[:3]),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_random_args_errors_and_progress_of_real_jobs(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str]
) -> None:
    """Random text (lone surrogates and NUL included, which args refuse with one line)."""
    root = write_project(tmp_path_factory.mktemp("hostile-jobs"))
    env = hostile_env(root)
    outputs = run_jobs(root, texts, env)
    everything = outputs + stored_rows(root / "jobs.db")
    assert not leaked(everything), leaked(everything)
    assert "Traceback" not in "\n".join(outputs[:-1])
