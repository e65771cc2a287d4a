"""The sheet's ``result:`` in Celery and RQ: the runtime's own result store is the source
of a run's value, and the adapter hands it only what the sheet keeps (``store: false``:
nothing; RQ keeps the rest for ``result.retention``); a value too big or breaking the
schema fails the attempt with ``jobdef.ResultRefused``, buried as the sheet says. Celery
under ``task_always_eager`` and a real RQ worker, each on a real Redis run store and a
real SQLite database."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import redis

from jobdef import ResultRefused
from jobdef.adapters.fidelity import verdicts
from jobdef.adapters.rq import SheetQueue, result_ttl
from jobdef.backends import open_backend
from jobdef.sheets.pipeline import load_registry
from support.workers import Processes

VALUE = {"total": 1200, "currency": "JPY"}

SHEETS = """\
apiVersion: jobdef/v1
kind: Defaults
name: results-defaults
owner: test-team
queue: {queue}
max_attempts: 1
timeout: 30s
errors: {{default: fatal}}
rerun: jobdef requeue --job {{name}} --state dead
retention: {{done: 1h, dead: until_resolved}}
---
apiVersion: jobdef/v1
kind: Job
name: kept_quote
handler: result_handlers:quote
args:
  order_id: {{type: integer}}
result:
  retention: 30m
---
apiVersion: jobdef/v1
kind: Job
name: dropped_quote
handler: result_handlers:quote
args:
  order_id: {{type: integer}}
result:
  store: false
---
apiVersion: jobdef/v1
kind: Job
name: tiny_quote
handler: result_handlers:quote
args:
  order_id: {{type: integer}}
result:
  max_bytes: 16
---
apiVersion: jobdef/v1
kind: Job
name: shaped_quote
handler: result_handlers:quote
args:
  order_id: {{type: integer}}
result:
  schema:
    type: object
    properties:
      total: {{type: string}}
---
apiVersion: jobdef/v1
kind: Job
name: plain_quote
handler: result_handlers:quote
args:
  order_id: {{type: integer}}
"""
HANDLERS = """\
def quote(order_id):
    return {"total": 1200, "currency": "JPY"}
"""


def _project(tmp_path: Path, queue: str) -> Path:
    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "jobs.yaml").write_text(SHEETS.format(queue=queue), encoding="utf-8")
    (tmp_path / "result_handlers.py").write_text(HANDLERS, encoding="utf-8")
    open_backend(f"sqlite:///{tmp_path / 'jobdef.db'}").close()
    return sheets


def test_rq_keeps_a_value_for_result_retention_and_nothing_with_store_false(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    sheets = _project(tmp_path, prefix)
    connection = redis.Redis.from_url(redis_url)
    queue = SheetQueue(connection, sheets=str(sheets), prefix=prefix)
    kept = queue.enqueue("kept_quote", order_id=1)
    dropped = queue.enqueue("dropped_quote", order_id=2)
    plain = queue.enqueue("plain_quote", order_id=3)
    tiny = queue.enqueue("tiny_quote", order_id=4)
    shaped = queue.enqueue("shaped_quote", order_id=5)
    processes = Processes(
        tmp_path,
        importable=(tmp_path,),
        env={"JOBDEF_DATABASE_URL": f"sqlite:///{tmp_path / 'jobdef.db'}"},
    )
    try:
        command = [
            sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", redis_url,
            "-w", "jobdef.adapters.rq.SheetWorker", prefix,
        ]  # fmt: skip
        worker = processes.start("rq", command)
        assert worker.process.wait(120) == 0, processes.log("rq")
    finally:
        processes.close()
    for job in (kept, dropped, plain):
        job.refresh()
        assert job.get_status() == "finished", processes.log("rq")
    assert kept.return_value() == VALUE
    assert 1700 < connection.ttl(kept.key) <= 1800  # result.retention: 30m
    assert dropped.return_value() is None  # store: false: RQ keeps nothing of it
    assert plain.return_value() == VALUE  # no result: RQ's own default, as before
    assert connection.ttl(plain.key) <= 500
    for job in (tiny, shaped):
        job.refresh()
        assert job.get_status() == "failed"
    dead = _dead(tmp_path)
    assert set(dead) == {"tiny_quote", "shaped_quote"}
    assert dead["tiny_quote"].startswith("jobdef.ResultRefused: job rq/")
    assert "more than the 16 allowed by result.max_bytes" in dead["tiny_quote"]
    assert "it breaks result.schema" in dead["shaped_quote"]
    assert "result.total: 1200 is not of type 'string'" in dead["shaped_quote"]
    connection.close()


def _dead(tmp_path: Path) -> dict[str, str]:
    """The dead jobs jobdef's database holds: job name -> its last error, one line."""
    backend = open_backend(f"sqlite:///{tmp_path / 'jobdef.db'}")
    try:
        return {
            r.job: f"{r.last_error.type}: {r.last_error.message}"
            for r in backend.list_jobs(state="dead", limit=10)
            if r.last_error is not None
        }
    finally:
        backend.close()


def test_celery_hands_its_result_backend_nothing_with_store_false(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    celery = pytest.importorskip("celery")
    from jobdef.adapters.celery import configure, sheet_task

    sheets = _project(tmp_path, prefix)
    app = celery.Celery(prefix, broker=redis_url)
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    configure(
        app,
        sheets=str(sheets),
        database=f"sqlite:///{tmp_path / 'jobdef.db'}",
        redis=redis_url,
        prefix=prefix,
    )

    @sheet_task(app, "kept_quote")
    def kept_quote(order_id: int) -> dict[str, object]:
        return dict(VALUE)

    @sheet_task(app, "dropped_quote")
    def dropped_quote(order_id: int) -> dict[str, object]:
        return dict(VALUE)

    @sheet_task(app, "tiny_quote")
    def tiny_quote(order_id: int) -> dict[str, object]:
        return dict(VALUE)

    assert kept_quote.delay(order_id=1).get() == VALUE
    assert dropped_quote.delay(order_id=2).get() is None
    with pytest.raises(ResultRefused, match=r"more than the 16 allowed by result\.max_bytes"):
        tiny_quote.delay(order_id=3)
    assert set(_dead(tmp_path)) == {"tiny_quote"}


def test_the_check_says_what_each_runtime_does_with_result_fields(tmp_path: Path) -> None:
    registry = load_registry([_project(tmp_path, "default")])
    kept, dropped = registry.job("kept_quote"), registry.job("dropped_quote")
    assert result_ttl(kept) == 1800
    assert result_ttl(dropped) is None
    assert result_ttl(registry.job("plain_quote")) is None
    rq = {v.field: v for v in verdicts("rq", kept)}
    celery = {v.field: v for v in verdicts("celery", kept)}
    assert rq["result.retention"].level == "exact"
    assert celery["result.retention"].level == "unsupported"
    assert "result_expires" in celery["result.retention"].how
    assert {v.field: v for v in verdicts("rq", dropped)}["result.store"].level == "exact"


def test_the_runtimes_page_has_the_result_table() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "runtimes.md").read_text("utf-8")
    section = page[page.index("## Where a job's result lives") :]
    section = section[: section.index("\n## ")]
    assert "| source of a run's result |" in section
    assert "| `result.store: false` |" in section
