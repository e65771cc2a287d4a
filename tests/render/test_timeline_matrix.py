"""The timeline conformance matrix: what `jobdef explain --format json` predicts is what
real workers do, attempt by attempt, on SQLite and on PostgreSQL.

Each cell is one Job sheet: a backoff strategy (fixed, linear, exponential, list),
a jitter (none, full, equal, decorrelated) and an outcome its handler is steered
into (retried until dead, fatal at attempt k, success at attempt k, timeouts,
crashes of the handler's process, its worker killed so that the job is reclaimed).
From each sheet's explain JSON alone the test predicts the attempts, how each
ends, the final state and the outbox messages; it then runs every cell with real
worker processes and compares the attempts table and the outbox with that
prediction, each attempt's start with the timeline's earliest/latest window, and
the wait the runtime drew before each retry with the timeline's wait range (to the
float: a trigger notes each drawn wait, which the attempts table does not keep).

The cells are a covering design, not the full 4 x 4 x 6 product: one cell per
strategy x outcome pair (24), the jitter of cell (s, o) being jitter (s + o) mod 4.
For a strategy the six outcomes take every jitter at least once, and for an
outcome the four strategies take each jitter exactly once, so every strategy x
jitter, strategy x outcome and jitter x outcome pair is run at 24 cells per engine
instead of 96; a formula that goes wrong for one strategy under one jitter, or one
outcome under one strategy, meets at least one cell.

All cells of an engine run in one worker (six handler processes), started once,
plus one "victim" worker that the test kills with SIGKILL while it holds the
reclaim cells' first attempts. Their explain JSON is computed with the victim's
lease (`jobdef explain --lease`), and the start after each reclaimed attempt is
checked against explain's bound after a lost attempt: the timeout, the lease and
one reclaim interval.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.cli import main as jobdef_main
from jobdef.runtime.classify import class_names
from jobdef.runtime.errors import AttemptTimedOut, HandlerCrashed
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.stores import ENGINES

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"

STRATEGIES = ("fixed", "linear", "exponential", "list")
JITTERS = ("none", "full", "equal", "decorrelated")
OUTCOMES = ("dead", "fatal", "success", "timeout", "crash", "reclaim")

# Waits of 50-200 ms before jitter; the 400 ms cap only binds decorrelated jitter,
# whose draws grow threefold from `initial`.
BACKOFFS = {
    "fixed": "strategy: fixed, initial: 150ms",
    "linear": "strategy: linear, initial: 60ms",
    "exponential": "strategy: exponential, initial: 50ms, multiplier: 2",
    # Not sorted, so that a wait taken from the wrong entry shows.
    "list": "strategy: list, initial: 50ms, delays: [200ms, 50ms, 120ms]",
}
MAX_ATTEMPTS = 4
FATAL_AT = {"fixed": 2, "linear": 3, "exponential": 4, "list": 3}
SUCCESS_AT = {"fixed": 4, "linear": 2, "exponential": 3, "list": 2}
# Every attempt times out (dead at the end), or two do and the third succeeds.
SCRIPTS: dict[str, dict[str, list[str]]] = {
    "timeout": {
        "fixed": ["hang"],
        "linear": ["hang", "hang", "ok"],
        "exponential": ["hang"],
        "list": ["hang", "hang", "ok"],
    },
    "crash": {
        "fixed": ["crash", "crash", "ok"],
        "linear": ["crash", "ok"],
        "exponential": ["crash"],
        "list": ["crash", "ok"],
    },
}
ALL_EVENTS = ("retry", "dead", "timeout", "reclaimed", "done")
EVENT_SETS = (ALL_EVENTS, ("dead", "done"), ("retry", "timeout", "reclaimed"))
# A handler that returns or raises takes milliseconds; this timeout only widens the
# latest starts of explain's timeline, which assume every attempt ran to it.
TIMEOUT = "1s"
# The "hang" act sleeps far past this, so the worker kills the child at it.
HANG_TIMEOUT = "250ms"
# A reclaimed attempt ends, for the queue, when a reclaimer finds its lease expired: up
# to the lease and one reclaim interval after its timeout, which explain's "latest
# start if lost" allows for, computed here with the victim's lease (explain --lease).
# The victim must be killed before its attempts time out (else they are recorded as
# timeouts), which takes a second or two; the victim's lease is longer than the
# timeout, so a reclaimed attempt's next start lies past explain's plain latest start
# (the claim writes lease_until = start + lease) and only the bound after a lost
# attempt holds it. The rescuing worker is up long before the victim's lease expires.
RECLAIM_TIMEOUT = "8s"

# How late a worker may start an attempt after its wait is over: its 50 ms poll, a
# claim and a commit, and handler processes being replaced after kills (this matrix
# kills twenty per engine), on a 2-core machine shared with other test runs. Seen:
# under 0.5 s on a quiet machine, up to 1.9 s at a load average of 5. Each attempt may
# be that late, so the window of attempt n allows n times this, the pause before an
# attempt once. The waits themselves are checked exactly (see _waits), so this slack
# bounds only how promptly the worker runs what is due.
SCHEDULING_TOLERANCE = 3.0
# The wait is drawn from the worker's clock before the move of the job; the attempt's
# finished_at is the engine's reading during that move, one commit (on PostgreSQL a
# round trip too) later: 8 ms seen here. So an observed pause may be shorter than the
# wait drawn by that much, and a start earlier than the window by as much.
CLOCK_EPSILON = 0.05
# A reclaimer reads the clock once per tick and then moves, one commit after the other,
# every job whose lease it found expired: the k-th move's finished_at is k commits after
# the reading its wait counts from. The victim holds four reclaim cells; 65 ms seen on
# PostgreSQL for the last of them.
RECLAIM_BATCH_EPSILON = 0.25
VICTIM_QUEUE = "victims"
VICTIM_LEASE = "10s"


@dataclass(frozen=True)
class Cell:
    """One sheet of the matrix and the script its handler follows."""

    strategy: str
    jitter: str
    outcome: str
    script: tuple[str, ...]
    events: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.strategy}_{self.jitter}_{self.outcome}"

    @property
    def timeout(self) -> str:
        if self.outcome == "reclaim":
            return RECLAIM_TIMEOUT
        return HANG_TIMEOUT if "hang" in self.script else TIMEOUT

    def sheet(self) -> str:
        queue = f"queue: {VICTIM_QUEUE}\n" if self.outcome == "reclaim" else ""
        return (
            "apiVersion: jobdef/v1\n"
            "kind: Job\n"
            f"name: {self.name}\n"
            "handler: matrix_handlers:act\n"
            f"{queue}"
            "args:\n"
            "  script: {type: array, items: {type: string}}\n"
            "  marker: {type: string, required: false}\n"
            f"max_attempts: {MAX_ATTEMPTS}\n"
            f"backoff: {{{BACKOFFS[self.strategy]}, max: 400ms, jitter: {self.jitter}}}\n"
            f"timeout: {self.timeout}\n"
            "errors: {retry: [ConnectionError, TimeoutError], fatal: [ValueError], "
            "default: retry}\n"
            "on_reclaim: retry\n"
            f"notify: {{channel: ops, events: [{', '.join(self.events)}]}}\n"
        )


def _script(strategy: str, outcome: str) -> tuple[str, ...]:
    if outcome == "dead":
        return ("retry",)
    if outcome == "fatal":
        return ("retry",) * (FATAL_AT[strategy] - 1) + ("fatal",)
    if outcome == "success":
        return ("retry",) * (SUCCESS_AT[strategy] - 1) + ("ok",)
    if outcome == "reclaim":
        return ("die", "ok")
    return tuple(SCRIPTS[outcome][strategy])


CELLS = tuple(
    Cell(
        strategy,
        JITTERS[(s + o) % len(JITTERS)],
        outcome,
        _script(strategy, outcome),
        EVENT_SETS[(s + o) % len(EVENT_SETS)],
    )
    for s, strategy in enumerate(STRATEGIES)
    for o, outcome in enumerate(OUTCOMES)
)
PROBE = "probe"
PROBE_SHEET = f"""\
apiVersion: jobdef/v1
kind: Job
name: {PROBE}
handler: matrix_handlers:act
args:
  script: {{type: array, items: {{type: string}}}}
  marker: {{type: string, required: false}}
errors: {{default: fatal}}
"""
CHANNEL_SHEET = """\
apiVersion: jobdef/v1
kind: Channel
name: ops
type: log
# Far above the matrix's messages a minute, so that none waits for a digest.
digest_after: 1000
"""


def test_the_cells_cover_every_pair_of_strategy_jitter_and_outcome() -> None:
    pairs = {(c.strategy, c.jitter) for c in CELLS}
    assert pairs == {(s, j) for s in STRATEGIES for j in JITTERS}
    assert {(c.strategy, c.outcome) for c in CELLS} == {
        (s, o) for s in STRATEGIES for o in OUTCOMES
    }
    assert {(c.jitter, c.outcome) for c in CELLS} == {(j, o) for j in JITTERS for o in OUTCOMES}


# -- the prediction, from explain's JSON alone ------------------------------------------

# The error each act leaves on its attempt (as the sheet's errors table is matched:
# the class and its bases, nearest first), and the outcome the attempt is recorded with
# when the handler did not raise on its own.
_RAISED = {
    "retry": (class_names(ConnectionError), None),
    "fatal": (class_names(ValueError), None),
    "hang": (class_names(AttemptTimedOut), "timeout"),
    "crash": (class_names(HandlerCrashed), "crashed"),
}
# How an attempt ended, as an event of its own sent before the retry or dead event.
_ENDED_EVENTS = ("timeout", "reclaimed")


@dataclass(frozen=True)
class Prediction:
    outcomes: tuple[str, ...]  # the attempts table's outcome of each attempt
    final: str
    notes: tuple[tuple[str, int], ...]  # (event, attempt) of each outbox message, in order


def _action(errors: list[dict[str, Any]], names: tuple[str, ...]) -> str:
    """What explain's errors table does with an error of these classes."""
    for name in names:
        for row in errors:
            if row["class"] == name:
                return str(row["action"])
    (default,) = [row for row in errors if row["class"] is None]
    return str(default["action"])


def predict(data: dict[str, Any], script: tuple[str, ...]) -> Prediction:
    """The attempts, final state and notifications of a job explained by ``data``."""
    attempts = len(data["timeline"]["rows"])
    events = set(data["notify"]["events"]) if data["notify"]["channel"] else set()
    outcomes: list[str] = []
    notes: list[tuple[str, int]] = []
    final = ""
    for n in range(1, attempts + 1):
        act = script[min(n, len(script)) - 1]
        if act == "ok":
            outcomes.append("done")
            notes.extend([("done", n)] if "done" in events else [])
            final = "done"
            break
        if act == "die":
            ended: str | None = "reclaimed"
            decided = "retry" if data["worker_dies"]["on_reclaim"] == "retry" else "dead"
        else:
            names, ended = _RAISED[act]
            decided = "retry" if _action(data["errors"], names) == "retry" else "dead"
        if decided == "retry" and n == attempts:
            decided = "dead"
        outcomes.append(ended or decided)
        fired = ([ended] if ended in _ENDED_EVENTS else []) + [decided]
        notes.extend((event, n) for event in fired if event in events)
        if decided == "dead":
            final = "dead"
            break
    return Prediction(tuple(outcomes), final, tuple(notes))


# -- sheets, explain, workers -----------------------------------------------------------


@dataclass(frozen=True)
class Matrix:
    sheets: Path
    explained: dict[str, dict[str, Any]]  # cell name -> `jobdef explain --format json`


def _explain_json(name: str, sheets: Path, *options: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    command = ["explain", name, "--sheets", str(sheets), "--format", "json", *options]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = jobdef_main(command)
    assert code == 0, err.getvalue()
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    sheets = tmp_path_factory.mktemp("matrix") / "jobdefs"
    sheets.mkdir()
    for cell in CELLS:
        (sheets / f"{cell.name}.yaml").write_text(cell.sheet(), encoding="utf-8")
    (sheets / "probe.yaml").write_text(PROBE_SHEET, encoding="utf-8")
    (sheets / "channels.yaml").write_text(CHANNEL_SHEET, encoding="utf-8")
    # A reclaim cell's first attempt is lost in the victim worker: its explain is computed
    # with the lease that worker holds, as `jobdef explain --lease` is for.
    explained = {
        cell.name: _explain_json(
            cell.name, sheets, *(("--lease", VICTIM_LEASE) if cell.outcome == "reclaim" else ())
        )
        for cell in CELLS
    }
    return Matrix(sheets, explained)


class Workers:
    """`jobdef worker` processes, each the leader of a process group of its own (its
    handler processes are in it), killed at the end if still running."""

    def __init__(self, url: str, sheets: Path, logs: Path) -> None:
        self.url, self.sheets, self.logs = url, sheets, logs
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, *options: str) -> subprocess.Popen[bytes]:
        env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
        command = [sys.executable, "-m", "jobdef", "worker", "--db", self.url]
        command += ["--sheets", str(self.sheets), "--poll", "50ms", "--prefetch", "1"]
        with (self.logs / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                [*command, *options],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.logs,
                start_new_session=True,
            )
        self.started.append(process)
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker and its handler processes at once, as a lost host would."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)


def _database_url(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if engine == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("postgres_schema")
    return f"{url}?schema={schema}"


def _outbox(url: str) -> list[tuple[str, str, dict[str, Any], float | None]]:
    """Every outbox row in order: (job, event, payload, delivered_at)."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            rows = conn.execute(
                "SELECT job, event, payload, delivered_at FROM jobdef_outbox ORDER BY id"
            ).fetchall()
        finally:
            conn.close()
        return [(job, event, json.loads(payload), at) for job, event, payload, at in rows]
    import psycopg

    base, _, schema = url.partition("?schema=")
    with psycopg.connect(base) as conn:
        found = conn.execute(
            f'SELECT job, event, payload, delivered_at FROM "{schema}".jobdef_outbox ORDER BY id'
        ).fetchall()
    return [
        (job, event, payload if isinstance(payload, dict) else json.loads(payload), at)
        for job, event, payload, at in found
    ]


# Every move of a job from running back to queued (a retry, or a reclaim that retries)
# noted by a trigger in the test's own database: the wait the runtime drew (last_delay)
# for each attempt, which the attempts table does not keep. It only watches.
_SQLITE_RECORDER = """
CREATE TABLE matrix_waits (job_id INTEGER, attempt INTEGER, delay REAL);
CREATE TRIGGER matrix_note_wait AFTER UPDATE ON jobdef_jobs
WHEN NEW.state = 'queued' AND OLD.state = 'running'
BEGIN INSERT INTO matrix_waits VALUES (NEW.id, NEW.attempt, NEW.last_delay); END;
"""
_POSTGRES_RECORDER = """
CREATE TABLE "{s}".matrix_waits (job_id bigint, attempt integer, delay double precision);
CREATE FUNCTION "{s}".matrix_note_wait() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO "{s}".matrix_waits VALUES (NEW.id, NEW.attempt, NEW.last_delay);
RETURN NEW; END $$;
CREATE TRIGGER matrix_note_wait AFTER UPDATE ON "{s}".jobdef_jobs FOR EACH ROW
WHEN (NEW.state = 'queued' AND OLD.state = 'running') EXECUTE FUNCTION "{s}".matrix_note_wait();
"""


def _install_recorder(url: str) -> None:
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            conn.executescript(_SQLITE_RECORDER)
        finally:
            conn.close()
        return
    import psycopg

    base, _, schema = url.partition("?schema=")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(_POSTGRES_RECORDER.replace("{s}", schema))


def _waits(url: str) -> dict[tuple[int, int], float]:
    """(job id, attempt) -> the wait drawn after that attempt failed."""
    query = "SELECT job_id, attempt, delay FROM {}matrix_waits"
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            rows = conn.execute(query.format("")).fetchall()
        finally:
            conn.close()
    else:
        import psycopg

        base, _, schema = url.partition("?schema=")
        with psycopg.connect(base) as pg:
            rows = pg.execute(query.format(f'"{schema}".')).fetchall()
    return {(job_id, attempt): delay for job_id, attempt, delay in rows}


def _finished(backend: Backend, ids: dict[str, int], url: str) -> bool:
    """Every job done or dead, and every message of the outbox delivered."""
    if any(backend.get(job_id).state not in ("done", "dead") for job_id in ids.values()):
        return False
    return all(at is not None for *_, at in _outbox(url))


# -- the run ----------------------------------------------------------------------------


@pytest.fixture
def workers(request: pytest.FixtureRequest, matrix: Matrix, tmp_path: Path) -> Iterator[Workers]:
    url = _database_url(request.param, request, tmp_path)
    started = Workers(url, matrix.sheets, tmp_path)
    try:
        yield started
    finally:
        started.close()


@pytest.mark.slow
@pytest.mark.parametrize("workers", ENGINES, indirect=True)
def test_every_cell_runs_as_its_explain_json_predicts(
    matrix: Matrix, workers: Workers, tmp_path: Path
) -> None:
    registry = load_registry([matrix.sheets])
    backend = open_backend(workers.url)
    _install_recorder(workers.url)
    try:
        queue = Queue(backend, registry)
        ids: dict[str, int] = {}
        marker = str(tmp_path / "died")

        # The reclaim cells first, alone, in a worker that is killed while it runs them.
        victims = [cell for cell in CELLS if cell.outcome == "reclaim"]
        for cell in victims:
            args = {"script": list(cell.script), "marker": f"{marker}-{cell.name}"}
            ids[cell.name] = queue.enqueue(cell.name, args).id
        victim = workers.start(
            "victim", "--queues", VICTIM_QUEUE, "--concurrency", "4", "--lease", VICTIM_LEASE
        )
        eventually(
            lambda: all(Path(f"{marker}-{c.name}.1").exists() for c in victims),
            what="every reclaim cell's first attempt to begin in the victim worker",
        )
        workers.kill(victim)

        # One worker for the rest; it also reclaims the victim's jobs and runs their
        # next attempts. The cells are enqueued once it runs jobs, so that their first
        # attempts start at their enqueue, as explain's timeline starts. Ten handler
        # processes: the hang and crash cells hold or kill up to eight at once, and the
        # other cells' retries must not wait for those to be replaced.
        worker = workers.start("worker", "--concurrency", "10", "--lease", "5s")
        probe = queue.enqueue(PROBE, {"script": ["ok"]}).id
        eventually(lambda: backend.get(probe).state == "done", what="the worker to run jobs")
        for cell in CELLS:
            if cell.outcome != "reclaim":
                ids[cell.name] = queue.enqueue(cell.name, {"script": list(cell.script)}).id
        eventually(
            lambda: _finished(backend, ids, workers.url),
            timeout=90,
            what="every cell to finish and the outbox to be delivered",
        )
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0, workers.log("worker")

        outbox, waits = _outbox(workers.url), _waits(workers.url)
        problems: list[str] = []
        lateness: list[float] = []
        for cell in CELLS:
            data, job_id = matrix.explained[cell.name], ids[cell.name]
            problems += _check(cell, data, backend, job_id, outbox=outbox, waits=waits)
            lateness += _lateness(backend, job_id, waits)
    finally:
        backend.close()
    print(
        f"\n{len(CELLS)} cells, {len(lateness)} retries; the latest began "
        f"{max(lateness):.3f}s after its wait was over "
        f"(scheduling tolerance {SCHEDULING_TOLERANCE}s)"
    )
    assert not problems, "\n".join(problems)


def _lateness(backend: Backend, job_id: int, waits: dict[tuple[int, int], float]) -> list[float]:
    """How long after its wait was over each retry started (seconds), for the report: how
    much of the scheduling tolerance was used."""
    attempts = backend.attempts(job_id)
    return [
        later.started_at - (earlier.finished_at or 0.0) - waits[(job_id, earlier.attempt)]
        for earlier, later in itertools.pairwise(attempts)
        if (job_id, earlier.attempt) in waits
    ]


def _check(
    cell: Cell,
    data: dict[str, Any],
    backend: Backend,
    job_id: int,
    *,
    outbox: list[tuple[str, str, dict[str, Any], float | None]],
    waits: dict[tuple[int, int], float],
) -> list[str]:
    """Every way the run of ``cell`` differs from what its explain JSON predicted."""
    expected = predict(data, cell.script)
    record = backend.get(job_id)
    attempts = backend.attempts(job_id)
    rows = data["timeline"]["rows"]
    where = f"{cell.name} (job {job_id})"
    problems: list[str] = []
    outcomes = tuple(a.outcome for a in attempts)
    if outcomes != expected.outcomes or [a.attempt for a in attempts] != list(
        range(1, len(attempts) + 1)
    ):
        problems.append(f"{where}: attempts {outcomes}, explain predicted {expected.outcomes}")
    if record.state != expected.final:
        problems.append(f"{where}: final state {record.state}, predicted {expected.final}")
    notes = tuple(
        (event, payload["attempts_used"])
        for job, event, payload, _ in outbox
        if job == cell.name and payload["job_id"] == job_id
    )
    if notes != expected.notes:
        problems.append(f"{where}: outbox (event, attempt) {notes}, predicted {expected.notes}")

    # A reclaim cell's first attempt waited for the victim worker to start, which is no
    # part of the policy: its timeline is counted from that first start instead.
    reclaim = cell.outcome == "reclaim"
    base = attempts[0].started_at if reclaim else record.created_at
    since = "attempt 1 began" if reclaim else "the enqueue"
    # Each reclaimed attempt moves the latest starts after it by explain's slack for a
    # lost attempt (the lease it assumed and one reclaim interval).
    lost_slack = data["timeline"]["lost_attempt"]["slack"]
    lost = 0
    for index, (attempt, row) in enumerate(zip(attempts, rows, strict=False)):
        offset = attempt.started_at - base
        low = row["earliest_start"] - CLOCK_EPSILON
        latest = row["latest_start"] + lost * lost_slack
        high = latest + row["attempt"] * SCHEDULING_TOLERANCE
        if not low <= offset <= high:
            problems.append(
                f"{where} attempt {row['attempt']}: started {offset:.3f}s after {since}, "
                f"outside explain's window [{row['earliest_start']:.3f}s, {latest:.3f}s] "
                f"({lost} earlier attempt(s) lost; "
                f"+{row['attempt'] * SCHEDULING_TOLERANCE:.2f}s for scheduling)"
            )
        if lost and lost == index and not offset > row["latest_start"]:
            # Every attempt before this one was lost, and the lease is longer than the
            # timeout: the job could not be back before the plain latest start.
            problems.append(
                f"{where} attempt {row['attempt']}: started {offset:.3f}s after {since}, "
                f"not past the plain latest start {row['latest_start']:.3f}s: the lost "
                "attempt's lease did not hold the job"
            )
        lost += attempt.outcome == "reclaimed"
        if index == 0:
            continue
        # The wait the runtime drew after the attempt before: inside explain's range, to
        # the float (explain and the runtime compute the same numbers).
        previous = row["attempt"] - 1
        drawn = waits.get((job_id, previous))
        if drawn is None or not row["wait_min"] - 1e-9 <= drawn <= row["wait_max"] + 1e-9:
            problems.append(
                f"{where} attempt {row['attempt']}: the runtime waited {drawn}s after attempt "
                f"{previous}, explain's wait is {row['wait_min']:.3f}s to {row['wait_max']:.3f}s"
            )
            drawn = row["wait_min"]
        # And the attempt began once that wait was over, never before, and soon after.
        finished = attempts[index - 1].finished_at
        assert finished is not None
        pause = attempt.started_at - finished
        epsilon = CLOCK_EPSILON
        if attempts[index - 1].outcome == "reclaimed":
            epsilon += RECLAIM_BATCH_EPSILON
        if not drawn - epsilon <= pause <= drawn + SCHEDULING_TOLERANCE:
            problems.append(
                f"{where} attempt {row['attempt']}: began {pause:.3f}s after attempt "
                f"{previous} ended, its wait was {drawn:.3f}s "
                f"(+{SCHEDULING_TOLERANCE:.2f}s for scheduling)"
            )
    return problems
