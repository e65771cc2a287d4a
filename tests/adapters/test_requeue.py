"""`jobdef requeue` of a job that died in RQ or Celery: listed with what to do when
nothing names the application's object, sent back through the runtime (a new RQ job, a
new Celery message) with the one `--app` or `[tool.jobdef] rq_app` / `celery_app` names,
and its dead row resolved."""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import redis
from conformance import Cell, write_sheets

from jobdef.backends import open_backend
from jobdef.backends.elsewhere import AttemptElsewhere, DeadElsewhere, record_dead_elsewhere
from jobdef.backends.records import ErrorInfo
from jobdef.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs" / "runtimes.md"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_a_job_dead_in_rq_goes_back_through_rq(
    tmp_path: Path, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cell = Cell("r_requeued", "strategy: fixed, initial: 1s, jitter: none", ("ok",))
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    url = f"sqlite:///{tmp_path / 'jobdef.db'}"
    backend = open_backend(url)
    args = {"cell": "r_requeued", "script": ["ok"]}
    dead = DeadElsewhere(
        runtime="rq",
        task_id="0b1c-dead",
        job=cell.name,
        queue=prefix,
        args=args,
        max_attempts=3,
        created_at=1_800_000_000.0,
        error=ErrorInfo("ConnectionError", "down"),
        attempts=[AttemptElsewhere(1, "w", 1_800_000_000.0, 1_800_000_001.0, "dead")],
    )
    record = record_dead_elsewhere(backend, dead, lambda r: [])
    module = f"{prefix.replace('-', '_')}_app"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(f"""\
            from redis import Redis
            from jobdef.adapters.rq import SheetQueue

            sheets = SheetQueue(Redis.from_url({redis_url!r}), sheets={str(sheets)!r},
                                prefix={prefix!r})
            """),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    common = ["requeue", str(record.id), "--db", url, "--sheets", str(sheets)]

    code, out, err = _run(common)
    assert code == 1
    assert "requeued 0 jobs" in out
    assert err == (
        f"jobdef requeue: job {record.id} died in rq (task 0b1c-dead) and goes back only "
        "through rq: name the jobdef.adapters.rq.SheetQueue in pyproject.toml, [tool.jobdef] "
        f'rq_app = "module:obj", or pass it once: jobdef requeue {record.id} --app module:obj\n'
    )

    code, out, err = _run([*common, "--app", f"{module}:sheets"])
    assert code == 0, err
    assert "requeued 1 job" in out
    resolved = backend.get(record.id)
    assert resolved is not None
    assert resolved.state == "resolved"
    assert (resolved.note or "").startswith("requeued to rq as ")
    new_id = (resolved.note or "").rpartition(" ")[2]
    client = redis.Redis.from_url(redis_url)
    assert client.lrange(f"rq:queue:{prefix}", 0, -1) == [new_id.encode()]
    backend.close()


def _dead(backend: Any, runtime: str, job: str, queue: str, args: dict[str, Any]) -> Any:
    dead = DeadElsewhere(
        runtime=runtime,
        task_id=f"{runtime}-{job}-dead",
        job=job,
        queue=queue,
        args=args,
        max_attempts=3,
        created_at=1_800_000_000.0,
        error=ErrorInfo("ConnectionError", "down"),
        attempts=[AttemptElsewhere(1, "w", 1_800_000_000.0, 1_800_000_001.0, "dead")],
    )
    return record_dead_elsewhere(backend, dead, lambda r: [])


def test_the_project_names_its_apps_once_for_requeue_and_check(
    tmp_path: Path, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[tool.jobdef] celery_app` and `rq_app`: `jobdef requeue ID` sends each job back
    through its own runtime with no --app, and `jobdef check --runtime` checks the named
    app unless told --no-app."""
    celery_cell = Cell("c_requeued", "strategy: fixed, initial: 1s, jitter: none", ("ok",))
    rq_cell = Cell("r_requeued", "strategy: fixed, initial: 1s, jitter: none", ("ok",))
    write_sheets(tmp_path / "jobdefs", (celery_cell, rq_cell), prefix)
    package = prefix.replace("-", "_")
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / package / "celery.py").write_text(
        textwrap.dedent(f"""\
            from celery import Celery
            from jobdef.adapters.celery import configure

            app = Celery("shop", broker={redis_url!r}, include=["{package}.tasks"])
            configure(app, sheets="jobdefs", database="sqlite:///jobdef.db", prefix={prefix!r})
            """),
        encoding="utf-8",
    )
    (tmp_path / package / "tasks.py").write_text(
        textwrap.dedent(f"""\
            from jobdef.adapters.celery import sheet_task
            from {package}.celery import app


            @sheet_task(app, "c_requeued")
            def c_requeued(cell, script, marker=None): ...
            """),
        encoding="utf-8",
    )
    (tmp_path / package / "jobs.py").write_text(
        textwrap.dedent(f"""\
            from redis import Redis
            from jobdef.adapters.rq import SheetQueue

            sheets = SheetQueue(Redis.from_url({redis_url!r}), sheets="jobdefs", prefix={prefix!r})
            """),
        encoding="utf-8",
    )
    backend = open_backend(f"sqlite:///{tmp_path / 'jobdef.db'}")
    upgrade_args = {"cell": "x", "script": ["ok"]}
    celery_dead = _dead(backend, "celery", celery_cell.name, prefix, upgrade_args)
    rq_dead = _dead(backend, "rq", rq_cell.name, prefix, upgrade_args)
    monkeypatch.chdir(tmp_path)

    # Nothing names the Celery app yet: what docs/runtimes.md shows.
    code, out, err = _run(["requeue", str(celery_dead.id)])
    assert code == 1
    shown = DOCS.read_text("utf-8").split("  $ jobdef requeue 12\n", 1)[1].split("  ```")[0]
    shown = shown.replace("\n  ", "\n").removeprefix("  ").replace("12", str(celery_dead.id))
    assert err + out == shown.replace("5f0c...", "celery-c_requeued-dead")

    (tmp_path / "pyproject.toml").write_text(
        f'[tool.jobdef]\ncelery_app = "{package}.celery:app"\nrq_app = "{package}.jobs:sheets"\n',
        encoding="utf-8",
    )

    code, out, err = _run(["requeue", str(celery_dead.id), str(rq_dead.id)])
    assert (code, out) == (0, "requeued 2 jobs\n"), err
    client = redis.Redis.from_url(redis_url)
    sent = {}
    for record in (celery_dead, rq_dead):
        row = backend.get(record.id)
        assert row is not None
        assert row.state == "resolved", row
        runtime, _, new_id = (row.note or "").removeprefix("requeued to ").partition(" as ")
        sent[runtime] = new_id
    # The Celery message and the RQ job, both on the sheets' queue of the test's own.
    messages = [json.loads(m) for m in client.lrange(prefix, 0, -1)]
    assert [m["headers"]["id"] for m in messages] == [sent["celery"]]
    assert client.lrange(f"rq:queue:{prefix}", 0, -1) == [sent["rq"].encode()]

    # check --runtime checks the app the project names; --no-app leaves it out.
    code, out, _ = _run(["check", "--runtime", "celery"])
    assert code == 1
    assert "infrastructure: no Celery worker answered within 3s, so no worker consumes " in out
    assert f"queue(s) '{prefix}': start one with `celery -A {package}.celery:app worker" in out
    code, out, _ = _run(["check", "--runtime", "celery", "--no-app"])
    assert code == 0, out
    assert "infrastructure: not checked; pass --app module:app to check it" in out

    # A name that does not load says where it is written.
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.jobdef]\ncelery_app = "{package}.celery:ap"\n', encoding="utf-8"
    )
    code, _, err = _run(["check", "--runtime", "celery"])
    assert code == 2
    assert f"[tool.jobdef] celery_app = '{package}.celery:ap': {package}.celery has no ap" in err
    client.close()
    backend.close()
