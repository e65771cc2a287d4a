"""A job that dies in a real ``jobdef worker --burst`` is reported on a ``log`` channel
as one line in words, in text and in JSON lines alike."""

from __future__ import annotations

import json
from pathlib import Path

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
name: fragile
title: A job that is refused every time
handler: notify_handlers:refuse
args:
  n: {type: integer}
max_attempts: 1
timeout: 30s
errors: {default: fatal}
notify: {channel: ops-log, events: [dead]}
rerun: jobdef requeue --job fragile --state dead
"""


def _burst(tmp_path: Path, *options: str) -> str:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "jobs.yaml").write_text(SHEETS, "utf-8")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    try:
        Queue(backend, load_registry([sheets])).enqueue("fragile", {"n": 7})
    finally:
        backend.close()
    processes = Processes(tmp_path, importable=(HERE,))
    try:
        worker = processes.start("w", worker_command(url, sheets, "--burst", *options))
        assert worker.process.wait(60) == 0
        return processes.log("w")
    finally:
        processes.close()


def test_a_dead_job_is_one_line_in_words_on_the_log_channel(tmp_path: Path) -> None:
    log = _burst(tmp_path)
    [line] = [line for line in log.splitlines() if " jobdef.notify " in line]
    head = " jobdef.notify WARNING [jobdef] dead: fragile (A job that is refused every time), "
    assert head + "job 1 | attempts: 1 of 1 | last error: PermissionError: job 7: access" in line
    rerun = "re-run: jobdef requeue 1 (procedure: jobdef requeue --job fragile --state dead)"
    assert f" | {rerun} | message id: fragile:1:1:dead:" in line
    assert line.endswith(" queue=default channel=ops-log")
    assert '"' not in line
    assert len(line) < 500


def test_with_json_lines_the_dead_jobs_fields_are_the_lines(tmp_path: Path) -> None:
    log = _burst(tmp_path, "--log-format", "json")
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    [dead] = [line for line in lines if line["logger"] == "jobdef.notify"]
    assert dead["level"] == "warning"
    assert dead["message"].startswith("[jobdef] dead: fragile (A job that is refused every time)")
    assert (dead["event"], dead["job"], dead["job_id"], dead["queue"]) == (
        "dead",
        "fragile",
        1,
        "default",
    )
    assert dead["error_type"] == "PermissionError"
    assert dead["channel"] == "ops-log"
    assert dead["message_id"].startswith("fragile:1:1:dead:")
