"""The timeline conformance idea for the runtime adapters: each cell is a sheet and a
script of acts; `jobdef explain --format json` alone predicts how many attempts run,
when each may start, whether the job ends done or dead, and the one notification;
the test runs the cells on a real runtime and compares.

The start of attempt n must fall in explain's window [earliest_start, latest_start]
measured from the enqueue, widened by ``tolerance`` per attempt for how promptly the
runtime starts what is due (and, for a hard time-limit kill, by its grace).
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapter_acts import ledger_key
from notify_servers import WebhookServer

from jobdef.cli import main as jobdef_main
from jobdef.runtime.classify import class_names
from jobdef.runtime.errors import AttemptTimedOut
from support import eventually

# The error each act leaves, as the sheet's errors table is matched.
RAISED = {
    "retry": class_names(ConnectionError),
    "fatal": class_names(ValueError),
    "hang": class_names(AttemptTimedOut),
    "stubborn": class_names(AttemptTimedOut),
}
CHANNEL = """\
apiVersion: jobdef/v1
kind: Channel
name: ops
type: webhook
url_env: JOBDEF_TEST_HOOK
format: json
timeout: 5s
digest_after: 1000
"""


@dataclass(frozen=True)
class Cell:
    """One sheet of a matrix and the script its job follows."""

    name: str
    backoff: str
    script: tuple[str, ...]
    max_attempts: int = 3
    timeout: str = "2s"
    deadline: str | None = None
    on_reclaim: str = "retry"
    handler: str = "adapter_acts:act"

    def sheet(self, queue: str) -> str:
        deadline = f"deadline: {self.deadline}\n" if self.deadline else ""
        return (
            "apiVersion: jobdef/v1\n"
            "kind: Job\n"
            f"name: {self.name}\n"
            f"handler: {self.handler}\n"
            f"queue: {queue}\n"
            "args:\n"
            "  cell: {type: string}\n"
            "  script: {type: array, items: {type: string}}\n"
            "  marker: {type: string, required: false}\n"
            f"max_attempts: {self.max_attempts}\n"
            f"backoff: {{{self.backoff}}}\n"
            f"timeout: {self.timeout}\n"
            f"{deadline}"
            "errors: {retry: [ConnectionError, TimeoutError], fatal: [ValueError], "
            "default: retry}\n"
            f"on_reclaim: {self.on_reclaim}\n"
            "notify: {channel: ops, events: [dead]}\n"
        )


def write_sheets(folder: Path, cells: tuple[Cell, ...], queue: str) -> Path:
    """The cells' sheets, every job on ``queue`` (the test's own)."""
    folder.mkdir(parents=True, exist_ok=True)
    for cell in cells:
        (folder / f"{cell.name}.yaml").write_text(cell.sheet(queue), encoding="utf-8")
    (folder / "channels.yaml").write_text(CHANNEL, encoding="utf-8")
    return folder


def explain(name: str, sheets: Path) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = jobdef_main(["explain", name, "--sheets", str(sheets), "--format", "json"])
    assert code == 0, err.getvalue()
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def _action(errors: list[dict[str, Any]], names: tuple[str, ...]) -> str:
    for name in names:
        for row in errors:
            if row["class"] == name:
                return str(row["action"])
    (default,) = [row for row in errors if row["class"] is None]
    return str(default["action"])


@dataclass(frozen=True)
class Prediction:
    attempts: int
    final: str  # done | dead
    windows: tuple[tuple[float, float], ...]  # (earliest, latest) start of each attempt


def predict(data: dict[str, Any], script: tuple[str, ...]) -> Prediction:
    """What explain's JSON says a job following ``script`` does."""
    rows = data["timeline"]["rows"]
    deadline = data["timeline"].get("deadline")
    windows = tuple((r["earliest_start"], r["latest_start"]) for r in rows)
    for n in range(1, len(rows) + 1):
        act = script[min(n, len(script)) - 1]
        if act == "ok":
            return Prediction(n, "done", windows[:n])
        if act == "die":
            decided = "retry" if data["worker_dies"]["on_reclaim"] == "retry" else "dead"
        else:
            decided = _action(data["errors"], RAISED[act])
        last = n == len(rows)
        past_deadline = deadline is not None and not last and rows[n]["earliest_start"] > deadline
        if decided != "retry" or last or past_deadline:
            return Prediction(n, "dead", windows[:n])
    raise AssertionError("a timeline has at least one row")


def ledger(client: Any, prefix: str, cell: str) -> list[float]:
    return [float(x) for x in client.lrange(ledger_key(prefix, cell), 0, -1)]


def dead_rows(database: Path) -> dict[str, dict[str, Any]]:
    """The dead jobs of the jobdef database by job name, with their attempt rows."""
    conn = sqlite3.connect(database)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT * FROM jobdef_jobs WHERE state = 'dead'").fetchall()
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            attempts = conn.execute(
                "SELECT attempt, outcome FROM jobdef_attempts WHERE job_id = ? ORDER BY attempt",
                (row["id"],),
            ).fetchall()
            found[row["job"]] = dict(row) | {"attempt_rows": [tuple(a) for a in attempts]}
        return found
    finally:
        conn.close()


def check(
    name: str,
    prediction: Prediction,
    starts: list[float],
    enqueued_at: float,
    *,
    dead: dict[str, dict[str, Any]],
    hooks: dict[str, int],
    tolerance: float,
    extra: float = 0.0,
) -> list[str]:
    """Every way cell ``name`` did not do what explain predicted."""
    problems: list[str] = []
    if len(starts) != prediction.attempts:
        problems.append(
            f"{name}: {len(starts)} attempts ran, explain predicts {prediction.attempts}"
        )
    for n, (start, (earliest, latest)) in enumerate(
        zip(starts, prediction.windows, strict=False), start=1
    ):
        offset = start - enqueued_at
        high = latest + n * (tolerance + extra)
        if not earliest - 0.05 <= offset <= high:
            problems.append(
                f"{name}: attempt {n} began {offset:.3f}s after the enqueue, "
                f"outside explain's window [{earliest:.3f}, {latest:.3f}] (+{high - latest:.2f})"
            )
    if prediction.final == "dead":
        row = dead.get(name)
        if row is None:
            problems.append(f"{name}: no dead record in jobdef's database")
        elif row["attempt"] != prediction.attempts or len(row["attempt_rows"]) != len(starts):
            problems.append(
                f"{name}: the dead record counts {row['attempt']} attempts "
                f"({len(row['attempt_rows'])} rows), {prediction.attempts} ran"
            )
        if hooks.get(name, 0) != 1:
            problems.append(f"{name}: {hooks.get(name, 0)} dead notifications, expected 1")
    else:
        if name in dead:
            problems.append(f"{name}: done, yet a dead record exists")
        if hooks.get(name, 0):
            problems.append(f"{name}: done, yet {hooks[name]} notifications were sent")
    return problems


def hooks(server: WebhookServer) -> dict[str, int]:
    """How many notifications the webhook received, by job name."""
    return dict(Counter(message_id.split(":")[0] for message_id in server.message_ids()))


Send = Callable[[str, str, list[str]], object]
"""Sends job ``name`` through the runtime's adapter with args ``cell`` and ``script``."""


@dataclass(frozen=True)
class MatrixRun:
    problems: list[str]  # every way a cell did not do what explain predicted
    dead: dict[str, dict[str, Any]]  # the dead rows of jobdef's database, by job name


def run_matrix(
    cells: tuple[Cell, ...],
    *,
    send: Send,
    probe: str,
    sheets: Path,
    client: Any,
    prefix: str,
    database: Path,
    webhook: WebhookServer,
    tolerance: float,
    settle: float,
    extra: Callable[[Cell], float] = lambda cell: 0.0,
) -> MatrixRun:
    """Run the matrix on workers already started, and compare with explain's JSON.

    A probe job ``probe`` runs first, so that every cell's first attempt starts at its
    enqueue. Then every cell is sent; once each ran the attempts explain predicts (and
    the dead ones are buried and notified), ``settle`` seconds more leave room for an
    attempt or a message too many to show. ``extra(cell)`` widens a cell's windows.
    """
    send(probe, "probe", ["ok"])
    eventually(lambda: ledger(client, prefix, "probe"), what="the worker to run the probe")

    enqueued: dict[str, float] = {}
    for cell in cells:
        enqueued[cell.name] = time.time()
        send(cell.name, cell.name, list(cell.script))
    predictions = {cell.name: predict(explain(cell.name, sheets), cell.script) for cell in cells}

    def finished() -> bool:
        dead, sent = dead_rows(database), hooks(webhook)
        for name, prediction in predictions.items():
            if len(ledger(client, prefix, name)) < prediction.attempts:
                return False
            if prediction.final == "dead" and (name not in dead or sent.get(name) != 1):
                return False
        return True

    eventually(finished, timeout=60, what="every cell to finish")
    time.sleep(settle)
    dead, sent = dead_rows(database), hooks(webhook)
    problems: list[str] = []
    for cell in cells:
        problems += check(
            cell.name,
            predictions[cell.name],
            ledger(client, prefix, cell.name),
            enqueued[cell.name],
            dead=dead,
            hooks=sent,
            tolerance=tolerance,
            extra=extra(cell),
        )
    return MatrixRun(problems, dead)
