"""The Celery adapter under ``task_always_eager`` (the usual test setting), on a real
Redis run store and a real SQLite database: the call is checked against the sheet,
a duplicate key is refused, and each error is classified and each attempt counted
as on a worker, so a test passes only where production does."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from adapter_acts import act_async
from celery import Celery
from celery_runs import cells_app, cells_env
from conformance import Cell, dead_rows, ledger, write_sheets

from jobdef.adapters.celery import sheet_task
from jobdef.errors import ArgsError

BACKOFF = "strategy: fixed, initial: 100ms, jitter: none"
CELLS = (
    Cell("e_fatal", BACKOFF, ("fatal",)),
    Cell("e_retry", BACKOFF, ("retry",)),
    Cell("e_recovers", BACKOFF, ("retry", "ok")),
    Cell("e_keyed", BACKOFF, ("ok",)),
    Cell("e_async", BACKOFF, ("retry", "ok"), handler="adapter_acts:act_async"),
)


@pytest.fixture
def eager(tmp_path: Path, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch) -> Celery:
    sheets = write_sheets(tmp_path / "jobdefs", CELLS, prefix)
    keyed = sheets / "e_keyed.yaml"
    keyed.write_text(
        keyed.read_text() + "idempotency: {key: '{cell}', dedupe_window: 1m}\n", encoding="utf-8"
    )
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the handlers run in this process
    return cells_app(env, task_always_eager=True, task_eager_propagates=True)


def _runs(redis_url: str, prefix: str, cell: str) -> int:
    return len(ledger(redis.Redis.from_url(redis_url), prefix, cell))


def test_an_eager_call_with_args_the_sheet_refuses_raises_and_runs_nothing(
    eager: Celery, redis_url: str, prefix: str
) -> None:
    with pytest.raises(ArgsError, match="script"):
        eager.tasks[f"{prefix}.e_fatal"].delay(cell="e_fatal", script="not a list")
    assert _runs(redis_url, prefix, "e_fatal") == 0


def test_an_eager_duplicate_within_the_dedupe_window_runs_once(
    eager: Celery, redis_url: str, prefix: str
) -> None:
    task = eager.tasks[f"{prefix}.e_keyed"]
    first = task.delay(cell="e_keyed", script=["ok"])
    second = task.delay(cell="e_keyed", script=["ok"])
    assert first.id == second.id
    assert _runs(redis_url, prefix, "e_keyed") == 1


def test_eager_errors_are_classified_and_attempts_counted_by_the_sheet(
    eager: Celery, tmp_path: Path, redis_url: str, prefix: str
) -> None:
    with pytest.raises(ValueError, match="the input is wrong"):
        eager.tasks[f"{prefix}.e_fatal"].delay(cell="e_fatal", script=["fatal"])
    with pytest.raises(ConnectionError, match="attempt 3"):
        eager.tasks[f"{prefix}.e_retry"].delay(cell="e_retry", script=["retry"])
    eager.tasks[f"{prefix}.e_recovers"].delay(cell="e_recovers", script=["retry", "ok"])

    assert _runs(redis_url, prefix, "e_fatal") == 1  # fatal: never retried
    assert _runs(redis_url, prefix, "e_retry") == 3  # max_attempts, then dead
    assert _runs(redis_url, prefix, "e_recovers") == 2
    dead = dead_rows(tmp_path / "jobdef.db")
    assert sorted(dead) == ["e_fatal", "e_retry"]
    assert dead["e_fatal"]["attempt_rows"] == [(1, "dead")]
    assert dead["e_retry"]["attempt_rows"] == [(1, "retry"), (2, "retry"), (3, "dead")]


def test_an_async_def_task_is_awaited_and_its_errors_classified_by_the_sheet(
    eager: Celery, tmp_path: Path, redis_url: str, prefix: str
) -> None:
    """Celery would hand back the coroutine unawaited: the attempt "succeeds" with the
    work never done. The adapter runs it as jobdef's worker does."""
    task = sheet_task(eager, "e_async", name=f"{prefix}.e_async_coroutine")(act_async)
    task.delay(cell="e_async", script=["retry", "ok"])
    assert _runs(redis_url, prefix, "e_async") == 2  # the first raised, was retried
    assert "e_async" not in dead_rows(tmp_path / "jobdef.db")
