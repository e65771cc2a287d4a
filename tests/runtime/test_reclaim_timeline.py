"""A lost attempt's job comes back within the window `jobdef explain` gives for it.

A worker killed mid-attempt records nothing: the job is back in the queue only once
its lease has expired and a reclaimer (every worker, every RECLAIM_INTERVAL) found
it. explain's "latest start if lost" allows for that, with the worker's default
lease or the one `--lease` names. Here a real worker process with a lease longer
than the sheet's timeout is SIGKILLed (with its handler process) during attempt 1,
a second worker reclaims the job and runs attempt 2, and that start must lie inside
the window explain computed with the victim's lease, and past the plain latest start
(the claim wrote lease_until = start + lease, so the job could not come back before),
on both engines.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import open_backend
from jobdef.cli import build_parser
from jobdef.cli import main as jobdef_main
from jobdef.policy.durations import parse_duration
from jobdef.policy.leases import DEFAULT_LEASE, RECLAIM_INTERVAL
from jobdef.runtime.maintenance.reclaim import LeaseReclaimer
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerSettings
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.stores import ENGINES, engine_db_url
from support.workers import Processes as WorkerProcesses
from support.workers import WorkerProcess, worker_command

HERE = Path(__file__).resolve().parent

TIMEOUT = "6s"
# Longer than the timeout: the reclaimed job cannot be back before explain's plain
# latest start of attempt 2 (timeout + wait), only within the bound after a loss.
VICTIM_LEASE = "9s"
SHEET = f"""\
apiVersion: jobdef/v1
kind: Job
name: lost_attempt
handler: lost_handlers:hold_first
max_attempts: 2
backoff: {{strategy: fixed, initial: 500ms, jitter: none}}
timeout: {TIMEOUT}
errors: {{default: retry}}
on_reclaim: retry
args:
  marker: {{type: string}}
"""
# How late a worker may start what is due: its 50 ms poll, a claim and a commit, on a
# 2-core machine shared with other test runs (as in the timeline matrix).
SCHEDULING_TOLERANCE = 3.0
# The claim's and the reclaim's clock readings are one commit apart at most.
CLOCK_EPSILON = 0.05


def test_the_runtime_reads_the_lease_and_the_reclaim_interval_that_explain_assumes() -> None:
    worker = WorkerSettings().lease_seconds
    reclaimer = inspect.signature(LeaseReclaimer.__init__).parameters["interval"].default
    cli = build_parser("worker").parse_args(["worker"]).lease
    assert worker == parse_duration(cli) == DEFAULT_LEASE
    assert reclaimer == RECLAIM_INTERVAL


@pytest.fixture(params=ENGINES)
def engine_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The job database on each engine (PostgreSQL: a schema of its own)."""
    return engine_db_url(request, tmp_path)


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "jobdefs"
    folder.mkdir()
    (folder / "lost_attempt.yaml").write_text(SHEET, encoding="utf-8")
    return folder


class Processes:
    """`jobdef worker` processes, each leading a process group with its handler processes."""

    def __init__(self, url: str, sheets: Path, logs: Path) -> None:
        self.url, self.sheets = url, sheets
        self.started = WorkerProcesses(logs, importable=(HERE,), group=True)

    def start(self, name: str, *options: str) -> WorkerProcess:
        return self.started.start(name, worker_command(self.url, self.sheets, *options))

    def log(self, name: str) -> str:
        return self.started.log(name)

    def close(self) -> None:
        self.started.close()


@pytest.fixture
def processes(engine_url: str, sheets: Path, tmp_path: Path) -> Iterator[Processes]:
    started = Processes(engine_url, sheets, tmp_path)
    try:
        yield started
    finally:
        started.close()


def _explain(sheets: Path, *options: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    command = ["explain", "lost_attempt", "--sheets", str(sheets), "--format", "json", *options]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = jobdef_main(command)
    assert code == 0, err.getvalue()
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


@pytest.mark.slow
def test_a_worker_killed_mid_attempt_has_its_job_back_within_explains_window(
    processes: Processes, sheets: Path, tmp_path: Path
) -> None:
    backend = open_backend(processes.url)
    try:
        marker = str(tmp_path / "began")
        job = Queue(backend, load_registry([sheets])).enqueue("lost_attempt", {"marker": marker})
        victim = processes.start("victim", "--lease", VICTIM_LEASE)
        eventually(lambda: Path(f"{marker}.1").exists(), what="attempt 1 to begin")
        victim.kill()  # with its handler processes, at once, as a lost host would be
        rescuer = processes.start("rescuer")
        eventually(
            lambda: backend.get(job.id).state in ("done", "dead"),
            timeout=90,
            what="the reclaimed job to finish",
        )
        assert rescuer.stop() == 0, processes.log("rescuer")
        attempts = backend.attempts(job.id)
        record = backend.get(job.id)
    finally:
        backend.close()
    outcomes = [a.outcome for a in attempts]
    # Killed before its timeout: attempt 1 was lost, not timed out by its worker.
    assert outcomes == ["reclaimed", "done"], (outcomes, record.last_error)
    assert attempts[0].worker_id != attempts[1].worker_id

    data = _explain(sheets, "--lease", VICTIM_LEASE)
    lost = data["timeline"]["lost_attempt"]
    assert lost["assumed_lease"] == parse_duration(VICTIM_LEASE)
    assert lost["lease_is_default"] is False
    assert lost["slack"] == parse_duration(VICTIM_LEASE) + RECLAIM_INTERVAL
    first, second = data["timeline"]["rows"]
    assert first["latest_start_lost"] == 0
    # The timeline counts from attempt 1's start: the victim's own start is no part of
    # the policy.
    offset = attempts[1].started_at - attempts[0].started_at
    low = second["earliest_start"] - CLOCK_EPSILON
    high = second["latest_start_lost"] + SCHEDULING_TOLERANCE
    assert low <= offset <= high, (
        f"attempt 2 began {offset:.3f}s after attempt 1, outside explain's window "
        f"[{second['earliest_start']:.3f}s, {second['latest_start_lost']:.3f}s] after a lost "
        f"attempt (+{SCHEDULING_TOLERANCE}s for scheduling)"
    )
    # The lease held the job past the bound after an ordinary failure: only the bound
    # after a lost attempt covers this start.
    assert offset > second["latest_start"], (offset, second)
    # With the default lease, explain's bound is wider still (30 s > 9 s).
    default = _explain(sheets)["timeline"]
    assert default["lost_attempt"]["assumed_lease"] == DEFAULT_LEASE
    assert default["rows"][1]["latest_start_lost"] > second["latest_start_lost"]
