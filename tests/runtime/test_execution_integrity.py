"""Execution integrity with real worker processes: every handler run is one attempt.

Each handler here appends a line to a ledger file outside the job database, so
a test counts how often a handler really ran and checks it against the
attempts the queue recorded: a finished job never runs again because a
neighbour crashed or timed out, the worker never blocks on a child's pipe, a
progress value that cannot be stored is dropped with a warning, error text is
bounded, coroutine handlers are awaited, and a worker that lost a lease stops
the handler and records nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from runtime_workers import Workers

from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.workers import process_alive

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SRC = HERE.parent.parent / "src"
SHEETS = HERE / "integrity_sheets"


@pytest.fixture
def registry() -> Registry:
    return load_registry([SHEETS])


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    """The runtime folder's worker processes, serving the integrity sheets."""
    started = Workers(db_url, tmp_path, sheets=SHEETS)
    yield started
    started.stop_all()


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger.txt"


def _runs(ledger: Path) -> Counter[tuple[int, int]]:
    """How often each (job id, attempt) ran, from the ledger."""
    if not ledger.exists():
        return Counter()
    lines = ledger.read_text().split()
    return Counter((int(lines[i]), int(lines[i + 1])) for i in range(0, len(lines), 3))


def _outcomes(backend, job_id: int) -> list[str]:
    return [a.outcome for a in backend.attempts(job_id)]


def _done(backend, ids) -> bool:
    return all(backend.get(i).state == "done" for i in ids)


# -- item 1: no repeated result, no blocked pipe ---------------------------------------


@pytest.mark.parametrize("how", ["exit", "sleep"])
def test_a_neighbours_crash_or_timeout_never_runs_finished_jobs_again(
    backend, registry, workers, ledger, how
):
    queue = Queue(backend, registry)
    quick = [queue.enqueue("ledger", {"ledger": str(ledger), "index": i}).id for i in range(15)]
    crasher = queue.enqueue("crash_first", {"ledger": str(ledger), "how": how}).id
    worker = workers.start("--concurrency", "1", lease="30s")
    eventually(lambda: _done(backend, [*quick, crasher]), what="every job to be done")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    runs = _runs(ledger)
    assert {job: runs[(job, 1)] for job in quick} == dict.fromkeys(quick, 1)
    assert sum(runs.values()) == 17  # 15 quick ones, then the crasher's two attempts
    for job in quick:
        assert _outcomes(backend, job) == ["done"]
    assert _outcomes(backend, crasher) == ["crashed" if how == "exit" else "timeout", "done"]


def test_large_args_and_chatty_handlers_never_block_the_worker_on_its_pipe(
    backend, registry, workers, ledger
):
    # Each batch of 16 jobs is ~2.4 MB of args; each handler sends ~400 KB of progress:
    # both ways more than a socket buffer holds while the other side is busy.
    queue = Queue(backend, registry)
    blob = "b" * 150_000
    args = [{"ledger": str(ledger), "blob": blob, "beats": 40} for _ in range(40)]
    ids = [record.id for record in queue.enqueue_many("chatty", args)]
    worker = workers.start("--concurrency", "1", lease="30s")
    eventually(lambda: _done(backend, ids), timeout=90, what="every chatty job to be done")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    runs = _runs(ledger)
    assert sorted(runs) == [(job, 1) for job in sorted(ids)]
    assert set(runs.values()) == {1}


def test_sigterm_drains_while_large_batches_and_progress_cross_the_pipe(
    backend, registry, workers, ledger
):
    queue = Queue(backend, registry)
    args = [{"ledger": str(ledger), "blob": "b" * 150_000, "beats": 40} for _ in range(200)]
    ids = [record.id for record in queue.enqueue_many("chatty", args)]
    worker = workers.start("--concurrency", "1", "--grace", "20s", lease="30s")
    eventually(lambda: len(_runs(ledger)) >= 3, what="a few chatty jobs to run")
    time.sleep(3)  # long enough for a worker blocked on its pipe to be stuck for good
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    states = Counter(backend.get(job).state for job in ids)
    assert states["running"] == 0
    assert states["done"] + states["queued"] == len(ids)
    assert states["done"] == len(_runs(ledger))


# -- item 2 (progress half): values that cannot be stored, error text bounds --------


@pytest.mark.parametrize("kind", ["set", "datetime", "nan", "large", "deep", "lambda"])
def test_progress_that_cannot_be_stored_is_dropped_with_one_warning(
    backend, registry, workers, ledger, kind
):
    queue = Queue(backend, registry)
    job = queue.enqueue("bad_progress", {"ledger": str(ledger), "kind": kind}).id
    after = queue.enqueue("ledger", {"ledger": str(ledger), "index": 1}).id
    worker = workers.start("--concurrency", "1", lease="30s")
    eventually(lambda: _done(backend, [job, after]), what="both jobs to be done")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    log = workers.log()
    assert "Traceback" not in log
    assert log.count("progress dropped") == 1, log
    assert _outcomes(backend, job) == ["done"]
    assert backend.get(job).progress == {"ok": True}


def test_a_huge_error_message_is_stored_cut_with_a_marker(backend, registry, workers):
    job = Queue(backend, registry).enqueue("big_error", {"size": 2_000_000}).id
    workers.start("--concurrency", "1", lease="30s")
    eventually(lambda: backend.get(job).state == "dead", what="the failing job to be dead")
    [attempt] = backend.attempts(job)
    message, trace = attempt.error.message, attempt.error.traceback
    bound = 64 * 1024 + 512  # the bound and its marker
    assert len(message.encode()) <= bound
    assert len(trace.encode()) <= bound
    assert message.startswith("start word word")
    assert "bytes cut" in message
    assert "bytes cut" in trace
    assert trace.rstrip().endswith("end")


# -- item 3: async handlers ------------------------------------------------------------


def test_async_handlers_are_awaited_and_report_progress(backend, registry, workers, ledger):
    queue = Queue(backend, registry)
    ids = [queue.enqueue("async_ledger", {"ledger": str(ledger), "steps": 3}).id for _ in range(5)]
    worker = workers.start("--concurrency", "1", lease="30s")
    eventually(lambda: _done(backend, ids), what="the async jobs to be done")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert sorted(_runs(ledger)) == [(job, 1) for job in sorted(ids)]
    assert all(backend.get(job).progress == {"step": 3, "of": 3} for job in ids)
    assert "never awaited" not in workers.log()


def test_an_async_handler_past_its_timeout_is_killed_and_retried(
    backend, registry, workers, ledger
):
    job = Queue(backend, registry).enqueue("async_sleep_first", {"ledger": str(ledger)}).id
    workers.start(lease="30s")
    eventually(lambda: backend.get(job).state == "done", what="the retried async job")
    assert _outcomes(backend, job) == ["timeout", "done"]
    assert _runs(ledger) == Counter({(job, 1): 1, (job, 2): 1})


def test_check_imports_says_which_handlers_are_async():
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
    result = subprocess.run(
        [sys.executable, "-m", "jobdef", "validate", "--check-imports", str(SHEETS)],
        env=env,
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "handler integrity_handlers:async_ledger imports and takes its args: a coroutine "
        "function, awaited on an event loop in a handler process"
    ) in result.stdout
    assert (
        "handler integrity_handlers:ledger imports and takes its args: a plain function, "
        "called in a handler process"
    ) in result.stdout


# -- item 8: bounds, and a lost lease ---------------------------------------------------


def _worker_cli(*extra: str, db: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
    command = [sys.executable, "-m", "jobdef", "worker", "--db", db, "--sheets", str(SHEETS)]
    return subprocess.run(
        [*command, "--burst", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (("--lease", "0s"), "--lease 0s is too short"),
        (("--lease", "500ms"), "--lease 0.5s is too short"),
        (("--concurrency", "100000"), "--concurrency 100000 is out of bounds"),
        (("--concurrency", "257"), "--concurrency 257 is out of bounds"),
    ],
)
def test_worker_refuses_a_lease_or_concurrency_out_of_bounds(tmp_path, extra, names):
    # The database cannot be opened: the bounds must be checked before anything starts.
    result = _worker_cli(*extra, db=f"sqlite:///{tmp_path}/missing/dir/jobs.db")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert names in line
    assert "Traceback" not in result.stderr


def test_worker_accepts_the_shortest_lease(db_url):
    assert _worker_cli("--lease", "1s", db=db_url).returncode == 0


def test_a_worker_that_lost_a_lease_stops_the_handler_and_records_nothing(
    backend, registry, workers, tmp_path
):
    marker = str(tmp_path / "held")
    job = Queue(backend, registry).enqueue("hold", {"marker": marker, "seconds": 60}).id
    stale = workers.start(name="stale")  # lease 1s
    eventually(lambda: Path(f"{marker}.1").exists(), what="attempt 1 to start")
    child = int(Path(f"{marker}.1").read_text())
    stale.send_signal(signal.SIGSTOP)  # frozen past its lease: the job is reclaimed
    workers.start(name="fresh")
    eventually(lambda: backend.get(job).state == "done", what="the fresh worker to finish")
    stale.send_signal(signal.SIGCONT)
    # Within a heartbeat interval (lease/3) and a turn: the stale child is gone.
    eventually(lambda: not process_alive(child), timeout=10, what="the stale handler to be stopped")
    eventually(lambda: "was lost" in workers.log("stale"), what="the stale worker to say so")
    assert _outcomes(backend, job) == ["reclaimed", "done"]
    assert stale.poll() is None  # the worker itself goes on
