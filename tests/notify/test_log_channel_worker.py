"""A job that dies in a real ``jobdef worker --burst`` is reported on a ``log`` channel
as one line in words, in text and in JSON lines alike."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support.workers import Processes, worker_command

HERE = Path(__file__).resolve().parent

SHEETS = """\
apiVersion: jobdef/v1
kind: Channel
name: ops-log
type: log
---
apiVersion: jobdef/v1
kind: Job
name: send_invoice
title: Send invoice
handler: notify_handlers:no_address
args:
  invoice_id: {type: integer}
max_attempts: 5
backoff: {strategy: exponential, initial: 10s, max: 10m}
timeout: 30s
errors: {retry: [ConnectionError], fatal: [LookupError], default: retry}
notify: {channel: ops-log, events: [dead]}
rerun: jobdef requeue --job send_invoice --state dead
"""
PAGE = HERE.parents[1] / "docs" / "notifications.md"


def _burst(tmp_path: Path, *options: str) -> str:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "jobs.yaml").write_text(SHEETS, "utf-8")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    try:
        Queue(backend, load_registry([sheets])).enqueue("send_invoice", {"invoice_id": 8})
    finally:
        backend.close()
    processes = Processes(tmp_path, importable=(HERE,))
    try:
        worker = processes.start("w", worker_command(url, sheets, "--burst", *options))
        assert worker.process.wait(60) == 0
        return processes.log("w")
    finally:
        processes.close()


def _same_run(line: str) -> str:
    """``line`` without what differs from run to run: the time, the message id's."""
    line = re.sub(r"^\S+Z ", "TIME ", line)
    line = re.sub(r"when: \S+", "when: WHEN", line)
    return re.sub(r":dead:\d+", ":dead:N", line)


@pytest.mark.slow
def test_a_dead_job_is_one_line_in_words_on_the_log_channel(tmp_path: Path) -> None:
    log = _burst(tmp_path)
    [line] = [line for line in log.splitlines() if " jobdef.notify " in line]
    assert '"' not in line
    assert len(line) < 500
    # The line docs/notifications.md shows.
    [shown] = [
        text for text in PAGE.read_text("utf-8").splitlines() if " jobdef.notify WARNING " in text
    ]
    assert _same_run(line) == _same_run(shown)


@pytest.mark.slow
def test_with_json_lines_the_dead_jobs_fields_are_the_lines(tmp_path: Path) -> None:
    log = _burst(tmp_path, "--log-format", "json")
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    [dead] = [line for line in lines if line["logger"] == "jobdef.notify"]
    assert dead["level"] == "warning"
    assert dead["message"].startswith("[jobdef] dead: send_invoice (Send invoice), job 1 | ")
    assert (dead["event"], dead["job"], dead["job_id"], dead["queue"]) == (
        "dead",
        "send_invoice",
        1,
        "default",
    )
    assert dead["error_type"] == "LookupError"
    assert dead["channel"] == "ops-log"
    assert dead["message_id"].startswith("send_invoice:1:1:dead:")
