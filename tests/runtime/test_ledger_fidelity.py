"""Ledger = attempts: every handler invocation is one recorded attempt, on both engines.

Each handler's first action is to commit a row (job id, attempt, pid) to a
ledger, a SQLite file outside the job database (``ledger_handlers``). Real
``jobdef worker`` processes then drain a mix of quick jobs, jobs that sleep
past a short timeout, jobs whose child calls ``os._exit(1)`` and jobs with
1 MB args, while neighbours time out or crash, or while a worker is SIGKILLed
mid-drain and a second one finishes. At the end the ledger and the attempts
table agree exactly: each invocation has one attempt row, each attempt row
has its invocation, nothing ran twice under one attempt, and no job is left
running. Every scenario is bounded in time.

Then the rest of what can go wrong under a running worker, each on both engines
with real processes, each ending with a SIGTERM that drains: a child SIGKILLed
in the middle of a handler; a worker SIGSTOPped past its lease while a second
one reclaims its jobs, then SIGCONTed (its late completions are refused and
record nothing); and, on PostgreSQL, the server going away mid-drain, and a
worker SIGKILLed while its batched completion waits on a lock. The restart
cuts the worker's connections at a TCP proxy on loopback that the worker
reaches the server through, and restores it: from the worker, that is what a
restart of the server looks like, without restarting the server that other
tests share.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ledger_handlers
import pytest
from runtime_workers import Workers

from jobdef.backends.postgres.engine import QUERIES
from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.proxy import CuttableProxy
from support.stores import ENGINES, POSTGRES, engine_db_url
from support.workers import process_alive

pytestmark = pytest.mark.slow

SHEET = """\
apiVersion: jobdef/v1
kind: Defaults
name: ledger-defaults
max_attempts: 3
backoff: {strategy: fixed, initial: 0s, jitter: none}
timeout: 30s
errors: {default: retry}
retention: {done: 1h, dead: until_resolved}
limits: {args_bytes: 2000000}
---
apiVersion: jobdef/v1
kind: Job
name: quick
handler: ledger_handlers:quick
args:
  ledger: {type: string}
  index: {type: integer, minimum: 0}
---
apiVersion: jobdef/v1
kind: Job
name: steady
handler: ledger_handlers:steady
args:
  ledger: {type: string}
  seconds: {type: number}
---
apiVersion: jobdef/v1
kind: Job
name: large
handler: ledger_handlers:large
args:
  ledger: {type: string}
  blob: {type: string}
---
apiVersion: jobdef/v1
kind: Job
name: sleep_first
handler: ledger_handlers:sleep_first
timeout: 1s
args:
  ledger: {type: string}
---
apiVersion: jobdef/v1
kind: Job
name: hold_first
handler: ledger_handlers:hold_first
args:
  ledger: {type: string}
---
apiVersion: jobdef/v1
kind: Job
name: exit_first
handler: ledger_handlers:exit_first
args:
  ledger: {type: string}
---
apiVersion: jobdef/v1
kind: Job
name: gated
handler: ledger_handlers:gated
args:
  ledger: {type: string}
  gate: {type: string}
"""

BLOB = "m" * 1_000_000
"""One 1 MB string arg: past the 256 KiB default, within the sheet's raised limit."""


@pytest.fixture(params=ENGINES)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The job database on each engine (PostgreSQL: a schema of its own)."""
    return engine_db_url(request, tmp_path)


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "ledger.yaml").write_text(SHEET, "utf-8")
    return folder


@pytest.fixture
def registry(sheets: Path) -> Registry:
    return load_registry([sheets])


@pytest.fixture
def workers(db_url: str, tmp_path: Path, sheets: Path) -> Iterator[Workers]:
    """The runtime folder's worker processes, serving this file's sheet."""
    started = Workers(db_url, tmp_path, sheets=sheets)
    yield started
    started.stop_all()


def _mix(queue: Queue, ledger: str) -> list[int]:
    """Quick jobs around a timeout, an ``os._exit`` and 1 MB args, in enqueue order."""
    ids: list[int] = []

    def quick(count: int) -> None:
        for _ in range(count):
            ids.append(queue.enqueue("quick", {"ledger": ledger, "index": len(ids)}).id)

    quick(8)
    ids.append(queue.enqueue("sleep_first", {"ledger": ledger}).id)
    quick(4)
    ids.append(queue.enqueue("large", {"ledger": ledger, "blob": BLOB}).id)
    quick(4)
    ids.append(queue.enqueue("exit_first", {"ledger": ledger}).id)
    quick(3)
    ids.append(queue.enqueue("large", {"ledger": ledger, "blob": BLOB}).id)
    quick(4)
    return ids


UNSTARTED = frozenset({"released"})
"""Outcomes of attempt rows for claims whose handler never started: the store writes
one when a worker gives back a claim it had not dispatched (its child was killed for a
neighbour), under the same attempt number as the run that follows."""


def _assert_ledger_is_attempts(
    backend: Backend,
    ledger: str,
    ids: list[int],
    unstarted: frozenset[str] = UNSTARTED,
    never_started: frozenset[tuple[int, int]] = frozenset(),
) -> Counter[str]:
    """The ledger and the attempts table agree one to one; no job is left running.

    ``unstarted``: the outcomes an attempt row may have without a ledger entry;
    ``never_started``: the (job, attempt) pairs that may too, whatever their outcome
    (claims a frozen worker held and, back, said had not started: _never_started).
    Returns how many attempt rows that ran ended with each outcome.
    """
    states = Counter(backend.get(job).state for job in ids)
    assert states == Counter({"done": len(ids)}), states
    runs = Counter((job, attempt) for job, attempt, _pid in ledger_handlers.entries(ledger))
    repeated = {key: count for key, count in runs.items() if count != 1}
    assert not repeated, f"handler ran more than once under one attempt: {repeated}"
    rows = [row for job in ids for row in backend.attempts(job)]
    assert all(row.started_at is not None for row in rows)
    ran = Counter((row.job_id, row.attempt) for row in rows if row.outcome != "released")
    unrecorded = {key: ran[key] for key in sorted(runs) if ran[key] != 1}
    assert not unrecorded, f"ledger entries with not one attempt row that ran: {unrecorded}"
    unrun = {
        (row.job_id, row.attempt): row.outcome
        for row in rows
        if (row.job_id, row.attempt) not in runs
        and row.outcome not in unstarted
        and (row.job_id, row.attempt) not in never_started
    }
    assert not unrun, f"attempt rows with no ledger entry: {unrun}"
    return Counter(
        row.outcome
        for row in rows
        if (row.job_id, row.attempt) in runs and row.outcome != "released"
    )


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_neighbour_timeouts_and_exits_leave_one_attempt_row_per_run(
    backend, registry, workers, ledger, concurrency
):
    began = time.monotonic()
    ids = _mix(Queue(backend, registry), ledger)
    worker = workers.start("--burst", "--concurrency", concurrency, lease="30s")
    assert worker.wait(30) == 0, workers.log()
    outcomes = _assert_ledger_is_attempts(backend, ledger, ids)
    # One timeout and one crash, each retried once; every other job ran once.
    assert outcomes == Counter({"done": len(ids), "timeout": 1, "crashed": 1}), outcomes
    assert time.monotonic() - began < 30


def test_a_worker_killed_mid_drain_leaves_one_attempt_row_per_run(
    backend, registry, workers, ledger
):
    began = time.monotonic()
    queue = Queue(backend, registry)
    ids = [queue.enqueue("steady", {"ledger": ledger, "seconds": 0.05}).id for _ in range(30)]
    ids += [queue.enqueue("large", {"ledger": ledger, "blob": BLOB}).id for _ in range(2)]
    ids += _mix(queue, ledger)
    first = workers.start("--concurrency", "2", name="first", lease="1s")
    eventually(
        lambda: len(ledger_handlers.entries(ledger)) >= 8,
        timeout=20,
        what="the first worker to run a few jobs",
    )
    first.send_signal(signal.SIGKILL)
    assert first.wait(10) == -signal.SIGKILL
    second = workers.start("--concurrency", "2", name="second", lease="1s")
    eventually(
        lambda: all(backend.get(job).state == "done" for job in ids),
        timeout=30,
        what="the second worker to finish every job",
    )
    second.send_signal(signal.SIGTERM)
    assert second.wait(30) == 0, workers.log("second")
    # What the killed worker's children held and had not started, they gave back
    # (released, not counted); only the attempts that started were reclaimed.
    outcomes = _assert_ledger_is_attempts(backend, ledger, ids)
    assert outcomes["done"] == len(ids)
    assert time.monotonic() - began < 40


def _ledger_pid(ledger: str, job_id: int) -> int | None:
    """The pid of the process that ran ``job_id``'s handler, once its entry is there."""
    pids = [pid for job, _attempt, pid in ledger_handlers.entries(ledger) if job == job_id]
    return pids[0] if pids else None


def test_a_child_killed_mid_handler_leaves_one_attempt_row_per_run(
    backend, registry, workers, ledger
):
    began = time.monotonic()
    queue = Queue(backend, registry)
    ids = [queue.enqueue("steady", {"ledger": ledger, "seconds": 0.05}).id for _ in range(10)]
    victim = queue.enqueue("hold_first", {"ledger": ledger}).id
    ids += [victim, *_mix(queue, ledger)]
    worker = workers.start("--concurrency", "2", lease="30s")
    pid = eventually(lambda: _ledger_pid(ledger, victim), timeout=20, what="the held handler")
    os.kill(pid, signal.SIGKILL)  # its child, mid-handler; the worker and the other child live
    eventually(
        lambda: all(backend.get(job).state == "done" for job in ids),
        timeout=30,
        what="the worker to retry the killed attempt and finish every job",
    )
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(20) == 0, workers.log()
    outcomes = _assert_ledger_is_attempts(backend, ledger, ids)
    # The killed attempt, the mix's timeout and its os._exit, each retried once.
    assert outcomes == Counter({"done": len(ids), "crashed": 2, "timeout": 1}), outcomes
    assert [a.outcome for a in backend.attempts(victim)] == ["crashed", "done"]
    assert time.monotonic() - began < 60


def test_a_drain_whose_grace_runs_out_counts_the_handler_it_stops(
    backend, registry, workers, ledger
):
    """SIGTERM while a handler holds past the drain's grace: the worker stops it and
    records its attempt (it ran), so the next worker runs it under the next number."""
    began = time.monotonic()
    queue = Queue(backend, registry)
    victim = queue.enqueue("hold_first", {"ledger": ledger}).id
    ids = [victim, *(queue.enqueue("quick", {"ledger": ledger, "index": i}).id for i in range(6))]
    first = workers.start("--concurrency", "1", "--grace", "1s", name="first", lease="30s")
    eventually(lambda: _ledger_pid(ledger, victim), timeout=20, what="the held handler")
    first.send_signal(signal.SIGTERM)
    assert first.wait(20) == 0, workers.log("first")
    assert "grace period over" in workers.log("first")
    second = workers.start("--burst", "--concurrency", "1", name="second", lease="30s")
    assert second.wait(30) == 0, workers.log("second")
    outcomes = _assert_ledger_is_attempts(backend, ledger, ids)
    assert outcomes == Counter({"done": len(ids), "crashed": 1}), outcomes
    assert [a.outcome for a in backend.attempts(victim)] == ["crashed", "done"]
    assert time.monotonic() - began < 40


def test_a_worker_frozen_past_its_lease_is_reclaimed_and_its_late_results_refused(
    backend, registry, workers, ledger
):
    """SIGSTOP a worker mid-drain for longer than its lease: a second worker reclaims its
    jobs and finishes the queue. The frozen worker's handler processes, which are not
    frozen, finish what they run and start what they hold only while the leases are
    vouched for; back from SIGCONT, the worker's completions are refused and record
    nothing. Each run that started under the frozen worker's lease has its
    ``reclaimed`` row, each run of the second worker its own, and no attempt ran
    twice: at least once per attempt, as the guide says. A claim the frozen worker
    held and never started (stopped between its claim and the hand-off, or held back
    in a process) has a ``reclaimed`` row and no run; the worker, back, names it."""
    began = time.monotonic()
    queue = Queue(backend, registry)
    ids = [queue.enqueue("steady", {"ledger": ledger, "seconds": 0.1}).id for _ in range(24)]
    frozen = workers.start("--concurrency", "1", "--prefetch", "6", name="frozen", lease="1s")
    eventually(lambda: len(ledger_handlers.entries(ledger)) >= 2, 20, "the first runs")
    _freeze_outside_a_write(frozen, backend)
    try:
        other = workers.start("--concurrency", "2", name="other", lease="5s")
        eventually(
            lambda: all(backend.get(job).state == "done" for job in ids),
            timeout=40,
            what="the second worker to reclaim and finish every job",
        )
    finally:
        frozen.send_signal(signal.SIGCONT)
    eventually(
        lambda: "refused" in workers.log("frozen") or "was lost" in workers.log("frozen"),
        20,
        "the frozen worker to learn its leases are gone",
    )
    for process, name in ((frozen, "frozen"), (other, "other")):
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0, workers.log(name)
    never_started = _never_started(workers.log("frozen"))
    outcomes = _assert_ledger_is_attempts(backend, ledger, ids, never_started=never_started)
    assert outcomes["done"] == len(ids)
    assert outcomes["reclaimed"] >= 1  # the runs under the frozen worker's lease
    assert time.monotonic() - began < 60


def test_a_frozen_worker_s_process_starts_no_job_it_held_once_the_lease_may_be_gone(
    backend, registry, workers, ledger
):
    """A process holds a job behind a long one when its worker is SIGSTOPped. Another
    worker reclaims both and runs them; the long one ends in the first process, which
    does not then start the job it held (its lease was reclaimed: a second run of it
    would be a repeat the guide does not allow) but waits for its worker, which, back,
    takes it back and says so. Only the long one, frozen during that very run, ran
    twice."""
    frozen, long, held = _frozen_holding_a_job(backend, registry, workers, ledger, 6.0)
    try:
        other = workers.start("--concurrency", "2", name="other", lease="5s")
        eventually(
            lambda: all(backend.get(job).state == "done" for job in (long, held)),
            timeout=40,
            what="the second worker to reclaim and run both jobs",
        )
        time.sleep(1.0)  # the first process is past its long job: it would start the next
    finally:
        frozen.send_signal(signal.SIGCONT)
    eventually(
        lambda: (held, 1) in _never_started(workers.log("frozen")),
        20,
        "the frozen worker to take back the job it held and say it had not started",
    )
    for process, name in ((frozen, "frozen"), (other, "other")):
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0, workers.log(name)
    runs = Counter(job for job, _attempt, _pid in ledger_handlers.entries(ledger))
    assert runs == Counter({long: 2, held: 1}), runs
    assert [a.outcome for a in backend.attempts(held)] == ["reclaimed", "done"]
    assert [a.outcome for a in backend.attempts(long)] == ["reclaimed", "done"]
    _assert_ledger_is_attempts(backend, ledger, [long, held], never_started=frozenset({(held, 1)}))


def test_a_frozen_worker_killed_while_its_process_holds_a_job_back_loses_nothing(
    backend, registry, workers, ledger
):
    """The process holding a job its frozen worker no longer vouches for sees the worker
    die (SIGKILL while stopped) and gives the job back: it is released, not charged
    an attempt, and another worker runs it once."""
    frozen, long, held = _frozen_holding_a_job(backend, registry, workers, ledger, 30.0)
    time.sleep(1.0)  # past the vouch (a third of the 1 s lease): the process holds back
    frozen.send_signal(signal.SIGKILL)
    assert frozen.wait(10) == -signal.SIGKILL
    eventually(
        lambda: [a.outcome for a in backend.attempts(held)] == ["released"],
        timeout=20,
        what="the process to give back the job it held",
    )
    other = workers.start("--concurrency", "2", name="other", lease="5s")
    eventually(
        lambda: backend.get(held).state == "done" and backend.get(long).state == "running",
        timeout=40,
        what="the second worker to run the held job",
    )
    other.send_signal(signal.SIGTERM)
    other.wait(60)
    runs = Counter(job for job, _attempt, _pid in ledger_handlers.entries(ledger))
    assert runs[held] == 1, runs
    assert [a.outcome for a in backend.attempts(held)] == ["released", "done"]


def _frozen_holding_a_job(
    backend: Backend, registry: Registry, workers: Workers, ledger: str, seconds: float
) -> tuple[subprocess.Popen[bytes], int, int]:
    """A worker SIGSTOPped while its one process runs a job of ``seconds`` and holds a
    quick one behind it: (the worker, the long job, the held job)."""
    queue = Queue(backend, registry)
    long = queue.enqueue("steady", {"ledger": ledger, "seconds": seconds}).id
    held = queue.enqueue("quick", {"ledger": ledger, "index": 0}).id
    frozen = workers.start("--concurrency", "1", "--prefetch", "2", name="frozen", lease="1s")
    eventually(lambda: _ledger_pid(ledger, long), timeout=20, what="the long job to start")
    _freeze_outside_a_write(frozen, backend)
    # Frozen within half a second of the long job's start: the worker had not yet
    # recalled the job waiting behind it, which its process holds.
    assert backend.get(held).worker_id == backend.get(long).worker_id, workers.log("frozen")
    return frozen, long, held


_NEVER_STARTED = re.compile(
    r"lease of job (\d+) \(\w+\) attempt (\d+) was lost \(the job was reclaimed\): "
    r"its handler had not started"
)


def _never_started(log: str) -> frozenset[tuple[int, int]]:
    """The (job, attempt) pairs a worker's log says it lost before their handler started."""
    return frozenset((int(job), int(attempt)) for job, attempt in _NEVER_STARTED.findall(log))


def _freeze_outside_a_write(worker: subprocess.Popen[bytes], backend: Backend) -> None:
    """SIGSTOP ``worker`` at a moment it holds no SQLite write lock.

    A SQLite file has one writer at a time, and a process stopped inside its write
    transaction keeps the lock until it runs again or dies (docs/troubleshooting.md
    says so): no other worker can write meanwhile, on any lease. What this suite
    claims of a frozen worker is about its leases, so on SQLite the worker is
    stopped again a moment later until the file takes a write."""
    for _ in range(50):
        worker.send_signal(signal.SIGSTOP)
        if not backend.url.startswith("sqlite:") or _sqlite_writable(backend.url):
            return
        worker.send_signal(signal.SIGCONT)
        time.sleep(0.003)
    raise AssertionError("the worker held the SQLite write lock at every one of 50 stops")


def _sqlite_writable(url: str) -> bool:
    conn = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=0.2, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


@pytest.mark.parametrize("db_url", [POSTGRES], indirect=True)
def test_a_postgresql_restart_mid_drain_leaves_one_attempt_row_per_run(
    db_url, backend, registry, workers, ledger
):
    """The worker reaches PostgreSQL through a proxy that is cut for two seconds
    mid-drain (every connection closed, new ones refused) and restored."""
    host_port = db_url.split("@", 1)[-1].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    proxy = CuttableProxy((host or "127.0.0.1", int(port or 5432)))
    try:
        began = time.monotonic()
        queue = Queue(backend, registry)
        ids = [queue.enqueue("steady", {"ledger": ledger, "seconds": 0.05}).id for _ in range(40)]
        ids += _mix(queue, ledger)
        workers.db_url = db_url.replace(host_port, f"127.0.0.1:{proxy.port}", 1)
        worker = workers.start("--concurrency", "2", lease="10s")
        eventually(lambda: len(ledger_handlers.entries(ledger)) >= 8, 20, "the first runs")
        proxy.cut()
        time.sleep(2.0)
        proxy.restore()
        eventually(
            lambda: all(backend.get(job).state == "done" for job in ids),
            timeout=40,
            what="the worker to ride out the restart and finish every job",
        )
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(20) == 0, workers.log()
        log = workers.log()
        assert "the job store cannot be used" in log, log  # it did see the server go
        assert "Traceback" not in log, log
        outcomes = _assert_ledger_is_attempts(backend, ledger, ids)
        assert outcomes["done"] == len(ids)
        assert time.monotonic() - began < 60
    finally:
        proxy.close()


LOCKS = {
    "attempts-table": "LOCK TABLE {schema}.jobdef_attempts IN SHARE MODE",
    "job-rows": "SELECT id FROM {schema}.jobdef_jobs WHERE id IN ({ids}) FOR NO KEY UPDATE",
}
"""What the test holds, in a transaction of its own taken before the gate opens, while
the worker's completion waits; each catches one way a completion could fall apart:

- ``attempts-table``: every statement that writes an attempt row waits (heartbeats do
  not). A completion that committed the jobs' new state before their attempt rows
  would leave jobs done with no attempt row.
- ``job-rows``: the running jobs' rows, in the mode an UPDATE of them takes, so the
  foreign key check of an attempt row passes. A completion that committed the attempt
  rows before the jobs' new state would leave an attempt recorded twice (done, and
  then reclaimed)."""


def _waiting_on(watcher: Any, holder: int) -> list[tuple[int, str]]:
    """The sessions that wait on a lock that the session ``holder`` (a backend pid) holds:
    (pid, statement). pg_stat_activity is read once per statement and
    pg_blocking_pids() live, so a session is taken only when the read also shows it
    waiting on a lock: its statement is then the one that waits, not the one before."""
    rows = watcher.execute(
        "SELECT pid, query FROM pg_stat_activity "
        "WHERE wait_event_type = 'Lock' AND %s = ANY(pg_blocking_pids(pid))",
        [holder],
    ).fetchall()
    return [(pid, query) for pid, query in rows]


def _completion_starts(schema: str) -> set[str]:
    """The engine's statements that write jobs or their attempts as done (the completion,
    whatever its name, however many jobs it takes and in however many statements), as
    pg_stat_activity shows them, each up to its first parameter (where psycopg sends
    ``$1``)."""
    return {
        text.replace("{schema}", f'"{schema}"').split("%(", 1)[0]
        for text in QUERIES.values()
        if "SET state = 'done'" in text or ("jobdef_attempts" in text and "'done'" in text)
    }


def _session_alive(watcher: Any, pid: int) -> bool:
    return bool(watcher.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchall())


@pytest.mark.parametrize("lock", list(LOCKS))
@pytest.mark.parametrize("db_url", [POSTGRES], indirect=True)
def test_a_worker_killed_while_its_batched_completion_waits_loses_and_repeats_nothing(
    postgres_url, backend, registry, workers, ledger, *, lock
):
    """SIGKILL a worker while the statement that completes its finished jobs is in flight.

    Two handlers run and wait at a gate; the test takes one of :data:`LOCKS` in a
    transaction of its own and opens the gate, so the completion the worker then sends
    waits on the lock; the worker is killed while pg_stat_activity shows that statement
    waiting. The server ends the dead worker's statement before the lock goes (its
    sessions ask it to look for a lost client, PostgreSQL 14 and later), so nothing of
    it is written: neither the jobs it finished nor the ones it would have claimed with
    them. A second worker reclaims the killed worker's runs (``on_reclaim: retry``) and
    finishes everything. The ledger and the attempts table agree one to one, each run
    of the killed worker is one ``reclaimed`` attempt run once more, and no attempt ran
    twice. Nothing here depends on how many jobs one completion takes: a completion per
    job waits on the lock the same way."""
    import psycopg

    schema = f'"{backend.schema}"'  # the test's own (db_url)
    queue = Queue(backend, registry)
    gate = Path(ledger).with_name("gate")
    ids = [queue.enqueue("gated", {"ledger": ledger, "gate": str(gate)}).id for _ in range(20)]
    first = workers.start("--concurrency", "2", name="first", lease="3s")

    def held_jobs_run() -> set[int]:
        """Both handlers run, and the worker holds no other job: what waited behind them
        it gave back (``released``), so the only attempt rows it can write next are the
        completions of these two."""
        ran = {job for job, _attempt, _pid in ledger_handlers.entries(ledger)}
        running = {job for job in ids if backend.get(job).state == "running"}
        return ran if len(ran) == 2 and running == ran else set()

    held = sorted(eventually(held_jobs_run, 20, "both handlers to run, and nothing else held"))
    # Just after a heartbeat the next is a third of the lease away: the heartbeat, which
    # the job-rows lock would hold up too, does not come before the completion.
    leases = {job: backend.get(job).lease_until for job in held}
    eventually(
        lambda: all(backend.get(job).lease_until != until for job, until in leases.items()),
        10,
        "the worker's next heartbeat",
    )
    with (
        psycopg.connect(postgres_url, autocommit=True) as watcher,
        psycopg.connect(postgres_url) as locker,
    ):
        locker.execute(LOCKS[lock].format(schema=schema, ids=", ".join(map(str, held))))
        gate.touch()
        [(session, statement)] = eventually(
            lambda: _waiting_on(watcher, locker.info.backend_pid),
            20,
            "the worker's completion to wait on the lock",
        )
        assert statement.split("$", 1)[0] in _completion_starts(backend.schema), statement
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
        runs = ledger_handlers.entries(ledger)
        eventually(
            lambda: not any(process_alive(pid) for _job, _attempt, pid in runs),
            20,
            "the killed worker's handler processes to exit",
        )
        eventually(
            lambda: not _session_alive(watcher, session),
            10,
            "the server to end the killed worker's statement while it still waits",
        )
        locker.rollback()
    killed = {(job, attempt) for job, attempt, _pid in ledger_handlers.entries(ledger)}
    assert {job for job, _attempt in killed} >= set(held), killed
    second = workers.start("--concurrency", "2", name="second", lease="3s")
    eventually(
        lambda: all(backend.get(job).state == "done" for job in ids),
        timeout=40,
        what="the second worker to reclaim and finish every job",
    )
    second.send_signal(signal.SIGTERM)
    assert second.wait(30) == 0, workers.log("second")
    outcomes = _assert_ledger_is_attempts(backend, ledger, ids)
    assert outcomes == Counter({"done": len(ids), "reclaimed": len(killed)}), outcomes
    for job, attempt in sorted(killed):
        ran = [row.outcome for row in backend.attempts(job) if row.outcome != "released"]
        assert ran == ["reclaimed", "done"], (job, attempt, ran)
    # No job ran more often than its attempts allow (max_attempts 3): once per worker.
    runs_per_job = Counter(job for job, _attempt, _pid in ledger_handlers.entries(ledger))
    assert max(runs_per_job.values()) <= 2, runs_per_job
