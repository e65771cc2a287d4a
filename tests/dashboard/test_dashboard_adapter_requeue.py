"""Requeue from the dashboard of a job that died in RQ or Celery: sent back through the
runtime given with ``--app`` (``create_app(runtime_app=...)``) and really run there by
a real worker, or, without one, a line saying why not and how to give one."""

from __future__ import annotations

import os
import re
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from dashboard_process import free_port
from dashboard_steps import Client

from jobdef.backends import open_backend, upgrade
from jobdef.backends.elsewhere import AttemptElsewhere, DeadElsewhere, record_dead_elsewhere
from jobdef.backends.records import ErrorInfo
from jobdef.dashboard import create_app
from support import eventually
from support.workers import Processes

pytestmark = pytest.mark.slow  # Celery and RQ workers

TESTS = Path(__file__).resolve().parents[1]
ADAPTERS = TESTS / "adapters"
sys.path[:0] = [str(ADAPTERS), str(TESTS / "notify")]  # the adapters' acts and apps

REDIS_URL = os.environ.get("JOBDEF_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: adapter_acts:act
queue: {queue}
args:
  cell: {{type: string}}
  script: {{type: array, items: {{type: string}}}}
  marker: {{type: string, required: false}}
max_attempts: 2
backoff: {{strategy: fixed, initial: 1s, jitter: none}}
timeout: 5s
errors: {{default: retry}}
"""


def _dead_in(runtime: str, url: str, job: str, queue: str) -> int:
    """A job that died in ``runtime``, stored as its adapter stores one; its id."""
    backend = open_backend(url)
    try:
        dead = DeadElsewhere(
            runtime=runtime,
            task_id=f"{uuid.uuid4()}",
            job=job,
            queue=queue,
            args={"cell": job, "script": ["ok"]},
            max_attempts=2,
            created_at=1_800_000_000.0,
            error=ErrorInfo("ConnectionError", "the carrier was down"),
            attempts=[AttemptElsewhere(1, "w", 1_800_000_000.0, 1_800_000_001.0, "dead")],
        )
        return record_dead_elsewhere(backend, dead, lambda r: []).id
    finally:
        backend.close()


def _requeue(base: str, job_id: int) -> str:
    """Requeue ``job_id`` from its page, confirmed: the outcome line."""
    client = Client(base)
    form = [("action", "requeue"), ("ids", str(job_id)), ("confirm", "yes")]
    status, _, body = client.request("/actions/jobs", [*form, ("csrf", client.csrf())])
    assert status == 200, body
    found = re.search(r'id="outcome">([^<]*)<', body)
    assert found, body
    return found.group(1).replace("&#39;", "'").replace("&#34;", '"')


def _row(url: str, job_id: int) -> Any:
    backend = open_backend(url)
    try:
        return backend.get(job_id)
    finally:
        backend.close()


def test_a_job_dead_in_rq_goes_back_through_the_dashboards_app_and_runs_again(
    tmp_path: Path, prefix: str, serve: Any
) -> None:
    """Before, the requeue left the row alone and said "0 of 1 changed; 1 already
    moved"; no option gave the dashboard a runtime to send it through."""
    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "dr_rq.yaml").write_text(SHEET.format(name="dr_rq", queue=prefix))
    url = f"sqlite:///{tmp_path / 'jobdef.db'}"
    upgrade(url)
    job_id = _dead_in("rq", url, "dr_rq", prefix)

    # Without --app: nothing moves, and the line says why and what to do.
    text = _requeue(serve(create_app(url, sheets)).url, job_id)
    assert "already moved" not in text
    assert text.startswith("requeue: 0 of 1 changed; ")
    assert f"job {job_id} died in rq (task " in text
    assert (
        "name the jobdef.adapters.rq.SheetQueue in pyproject.toml, [tool.jobdef] rq_app = "
        '"module:obj", or start the dashboard with --app module:obj'
    ) in text
    assert _row(url, job_id).state == "dead"

    # With the application's SheetQueue named in [tool.jobdef] rq_app, as jobdef requeue
    # and jobdef check take it too: `jobdef dashboard` with no --app.
    module = f"{prefix.replace('-', '_')}_jobs"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(f"""\
            from redis import Redis
            from jobdef.adapters.rq import SheetQueue

            sheets = SheetQueue(Redis.from_url({REDIS_URL!r}), sheets={str(sheets)!r},
                                prefix={prefix!r})
            """),
        encoding="utf-8",
    )
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.jobdef]\nrq_app = "{module}:sheets"\n', encoding="utf-8"
    )
    processes = Processes(tmp_path, importable=(ADAPTERS, tmp_path), group=True)
    try:
        processes.env = {
            "JOBDEF_DATABASE_URL": url,
            "JOBDEF_TEST_REDIS": REDIS_URL,
            "JOBDEF_TEST_PREFIX": prefix,
        }
        command = [
            sys.executable, "-m", "rq.cli", "worker", "--url", REDIS_URL,
            "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-w", prefix,
        ]  # fmt: skip
        processes.start("worker", command)
        port = free_port()
        dashboard = [
            sys.executable, "-m", "jobdef", "dashboard", "--db", url, "--sheets", str(sheets),
            "--port", str(port),
        ]  # fmt: skip
        started = processes.start("dashboard", dashboard)  # in tmp_path, where the module is
        base = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            assert started.process.poll() is None, processes.log("dashboard")
            try:
                return Client(base).request("/api/overview")[0] == 200
            except OSError:
                return False

        eventually(answers, 60, "jobdef dashboard --app to answer")
        text = _requeue(base, job_id)
        assert text == "requeue: 1 of 1 changed", text
        row = _row(url, job_id)
        assert row.state == "resolved"
        assert re.fullmatch(
            r"requeued to rq as \S+ by anonymous@127\.0\.0\.1 in the dashboard", row.note or ""
        ), row.note
        client = redis.Redis.from_url(REDIS_URL)
        eventually(
            lambda: len(client.lrange(f"{prefix}:ledger:dr_rq", 0, -1)) == 1,
            30,
            "the RQ worker to run the requeued job",
        )
        # The same form again: the row is resolved, nothing is sent a second time.
        assert _requeue(base, job_id).startswith("requeue: 0 of 1 changed; 1 already moved")
        client.close()
    finally:
        processes.close()


def test_a_job_dead_in_celery_goes_back_through_the_celery_app_and_runs_again(
    tmp_path: Path, prefix: str, serve: Any
) -> None:
    """Before, the dashboard had no Celery app to send it through: "already moved"."""
    from celery_runs import celery_worker, cells_app, cells_env

    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "dr_celery.yaml").write_text(SHEET.format(name="dr_celery", queue=prefix))
    url = f"sqlite:///{tmp_path / 'jobdef.db'}"
    upgrade(url)
    job_id = _dead_in("celery", url, "dr_celery", prefix)
    env = cells_env(
        sheets=sheets, db=url, broker=REDIS_URL, redis_url=REDIS_URL, prefix=prefix, hook=""
    )
    text = _requeue(serve(create_app(url, sheets)).url, job_id)
    assert f"job {job_id} died in celery (task " in text
    assert "already moved" not in text

    processes = Processes(tmp_path, importable=(ADAPTERS,), group=True)
    try:
        celery_worker(processes, "w", env, prefix)
        base = serve(create_app(url, sheets, runtime_app=cells_app(env))).url
        assert _requeue(base, job_id) == "requeue: 1 of 1 changed"
        row = _row(url, job_id)
        assert row.state == "resolved"
        assert (row.note or "").startswith("requeued to celery as ")
        client = redis.Redis.from_url(REDIS_URL)
        eventually(
            lambda: len(client.lrange(f"{prefix}:ledger:dr_celery", 0, -1)) == 1,
            60,
            "the Celery worker to run the requeued task",
        )
        client.close()
    finally:
        processes.close()


def test_a_runtime_that_cannot_take_the_job_is_one_line_and_the_row_stays_dead(
    tmp_path: Path, serve: Any
) -> None:
    """The application's Redis does not answer: every job matching the filter is tried,
    each says why in one line, and none is resolved as if it had gone back."""
    from jobdef.adapters.rq import SheetQueue

    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "dr_rq.yaml").write_text(SHEET.format(name="dr_rq", queue="q"))
    url = f"sqlite:///{tmp_path / 'jobdef.db'}"
    upgrade(url)
    ids = [_dead_in("rq", url, "dr_rq", "q") for _ in range(2)]
    nobody = redis.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1)
    app = create_app(url, sheets, runtime_app=SheetQueue(nobody, sheets=sheets, prefix="p"))
    client = Client(serve(app).url)
    form = [("action", "requeue"), ("scope", "filter"), ("job", "dr_rq"), ("confirm", "yes")]
    status, _, body = client.request("/actions/jobs", [*form, ("csrf", client.csrf())])
    assert status == 200, body
    found = re.search(r'id="outcome">([^<]*)<', body)
    assert found, body
    text = found.group(1)
    assert text.startswith("requeue: 0 of 2 changed; "), text
    assert "already moved" not in text
    assert text.count("the run store cannot be reached to open the run of task") == 2, text
    assert [_row(url, i).state for i in ids] == ["dead", "dead"]


def test_an_app_that_is_neither_a_celery_app_nor_a_sheetqueue_is_refused_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobdef.cli import main

    url = f"sqlite:///{tmp_path / 'jobdef.db'}"
    upgrade(url)
    code = main(
        ["dashboard", "--db", url, "--sheets", str(TESTS.parent / "jobdefs"), "--app", "os:sep"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "--app 'os:sep' is a str; name module:obj (the Celery app, or the "
        "jobdef.adapters.rq.SheetQueue)"
    ), err
    assert len(err.splitlines()) == 1


def test_an_app_named_in_the_project_that_is_not_one_is_refused_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobdef.cli import main

    url = f"sqlite:///{tmp_path / 'jobdef.db'}"
    upgrade(url)
    (tmp_path / "pyproject.toml").write_text('[tool.jobdef]\ncelery_app = "os:sep"\n')
    monkeypatch.chdir(tmp_path)
    code = main(["dashboard", "--db", url, "--sheets", str(TESTS.parent / "jobdefs")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "[tool.jobdef] celery_app = 'os:sep' is a str; name module:obj (the Celery app, or "
        "the jobdef.adapters.rq.SheetQueue)"
    ), err
