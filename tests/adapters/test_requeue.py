"""`jobdef requeue` of a job that died in RQ: listed with what to do without --app, sent
back through the runtime with it (a new RQ job) and its dead row resolved."""

from __future__ import annotations

import contextlib
import io
import textwrap
from pathlib import Path

import pytest
import redis
from conformance import Cell, write_sheets

from jobdef.backends import open_backend
from jobdef.backends.elsewhere import AttemptElsewhere, DeadElsewhere, record_dead_elsewhere
from jobdef.backends.records import ErrorInfo
from jobdef.cli import main


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
    assert f"job {record.id} died in rq (task 0b1c-dead)" in err
    assert f"jobdef requeue {record.id} --app module:app" in err

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
