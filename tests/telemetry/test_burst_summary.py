"""What a --burst worker says at exit: the run in words, and the retried jobs it left
queued because their next attempt was not due yet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support.workers import Processes, worker_command

HERE = Path(__file__).resolve().parent

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: later
handler: telemetry_handlers:flaky
max_attempts: 2
backoff: {strategy: fixed, initial: 1h, jitter: none}
errors: {retry: [ConnectionError], default: fatal}
args:
  i: {type: integer}
"""


def _burst_log(tmp_path: Path, sheet: str) -> str:
    """The output of one `jobdef worker --burst` over ``sheet`` with one job enqueued."""
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "later.yaml").write_text(sheet, "utf-8")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    try:
        Queue(backend, load_registry([sheets])).enqueue("later", {"i": 1})
    finally:
        backend.close()
    processes = Processes(tmp_path, importable=(HERE,))
    try:
        worker = processes.start("w", worker_command(url, sheets, "--burst"))
        assert worker.process.wait(60) == 0
        return processes.log("w")
    finally:
        processes.close()


@pytest.mark.slow
def test_a_burst_says_a_retried_job_waits_for_its_next_attempt(tmp_path: Path) -> None:
    log = _burst_log(tmp_path, SHEET)
    assert re.search(
        r"1 retried job\(s\) still queued: the first next attempt is due in (59m\d+s|1h); "
        r"run the worker again then, or without --burst to wait for it",
        log,
    ), log
    assert re.search(
        r"stopped: claimed 1: 0 done, 1 retried, 0 dead, 0 timed out, 0 crashed, "
        r"0 released, 0 late writes refused",
        log,
    ), log
    assert "attempt 1 failed, retried after " in log
    assert "(ConnectionError); next attempt in 1h" in log
    assert "WorkerStats(" not in log


@pytest.mark.slow
def test_a_burst_that_left_nothing_waiting_says_nothing_of_it(tmp_path: Path) -> None:
    log = _burst_log(tmp_path, SHEET.replace("initial: 1h", "initial: 0s"))
    assert "1 done, 1 retried" in log
    assert "still queued" not in log
