"""The operator commands, run through the real entry point on a real database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from runtime_workers import SHEETS

from jobdef.backends.records import ClaimOptions, ErrorInfo
from jobdef.cli import main


@pytest.fixture
def run(db_url, capsys):
    def invoke(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--db", db_url])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def _sheets(*argv: str) -> list[str]:
    return [*argv, "--sheets", str(SHEETS)]


def _bury(backend, job_id):
    [record] = backend.claim(ClaimOptions(worker_id="w", lease_seconds=30))
    assert record.id == job_id
    backend.bury(record.lease, ErrorInfo("ValueError", "bad input"))


def test_enqueue_then_duplicate(run, backend):
    code, out, _ = run(*_sheets("enqueue", "noop", "--args", '{"n": 3}'))
    token = backend.get(1).receipt
    assert (code, out) == (0, f"enqueued job 1 (noop), receipt {token}\n")
    code, out, _ = run(*_sheets("enqueue", "noop", "--args", '{"n": 3}'))
    assert (code, out) == (
        0,
        f"job 1 (noop) with the same idempotency key is already there, receipt {token}\n",
    )


def test_enqueue_with_bad_args_is_one_line_and_stores_nothing(run, backend):
    code, out, err = run(*_sheets("enqueue", "noop", "--args", '{"n": "x"}'))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "args.n: 'x' is not of type 'integer'" in err
    assert backend.list_jobs() == []
    code, _, err = run(*_sheets("enqueue", "noop", "--args", "{n: 1}"))
    assert code == 2
    assert "--args is not JSON" in err
    code, out, err = run(*_sheets("enqueue", "noop", "--args", "[" * 100_000))
    assert code == 2
    assert err.count("\n") == 1
    assert "--args is nested too deep" in err
    assert backend.list_jobs() == []


@pytest.mark.slow
def test_worker_burst_runs_the_jobs_and_exits(run, backend):
    run(*_sheets("enqueue", "noop", "--args", '{"n": 1}'))
    code, out, _ = run(*_sheets("worker", "--burst", "--log-level", "warning"))
    assert code == 0
    assert "1 done" in out
    assert backend.get(1).state == "done"


def test_status_counts_per_job_and_state(run, backend):
    run(*_sheets("enqueue", "noop", "--args", '{"n": 1}'))
    run(*_sheets("enqueue", "noop", "--args", '{"n": 2}'))
    code, out, _ = run("status")
    assert code == 0
    assert out.splitlines()[0].split() == ["JOB", "QUEUE", "STATE", "COUNT", "OLDEST", "WAITING"]
    assert out.splitlines()[1].split()[:4] == ["noop", "default", "queued", "2"]
    code, out, _ = run("status", "--format", "json")
    assert json.loads(out)["jobs"][0]["count"] == 2


def test_jobs_lists_filters_and_shows_every_attempt(run, backend):
    run(*_sheets("enqueue", "noop", "--args", '{"n": 1}'))
    run(*_sheets("enqueue", "noop", "--args", '{"n": 2}'))
    _bury(backend, 1)
    code, out, _ = run("jobs", "--state", "dead")
    assert code == 0
    assert "ValueError: bad input" in out
    assert len(out.splitlines()) == 2
    code, out, _ = run("jobs", "--format", "json")
    assert [j["id"] for j in json.loads(out)] == [2, 1]
    code, out, _ = run("jobs", "show", "1")
    assert "state        dead" in out
    assert "w" in out.splitlines()[-1]
    assert "ValueError: bad input" in out.splitlines()[-1]


def test_jobs_show_of_an_unknown_id_is_one_clear_line(run, backend):
    code, _, err = run("jobs", "show", "99")
    assert code == 2
    assert "no job with id 99" in err


def test_requeue_resolve_and_cancel(run, backend):
    for n in range(3):
        run(*_sheets("enqueue", "noop", "--args", json.dumps({"n": n})))
    _bury(backend, 1)
    _bury(backend, 2)
    assert run("requeue", "1")[:2] == (0, "requeued 1 job\n")
    assert backend.get(1).state == "queued"
    assert run("resolve", "2", "--note", "fixed by hand")[:2] == (0, "job 2 resolved\n")
    assert backend.get(2).note == "fixed by hand"
    assert run("cancel", "3")[:2] == (0, "job 3 cancelled\n")
    code, _, err = run("cancel", "3")
    assert code == 2
    assert "job 3 is cancelled; only queued and running jobs can be cancelled" in err


def test_requeue_by_job_name_and_state(run, backend):
    run(*_sheets("enqueue", "noop", "--args", '{"n": 1}'))
    _bury(backend, 1)
    assert run("requeue", "--job", "noop", "--state", "dead")[:2] == (0, "requeued 1 job\n")


def test_prune_dry_run_counts_without_deleting(run, backend):
    run(*_sheets("enqueue", "noop", "--args", '{"n": 1}'))
    code, out, _ = run(*_sheets("prune", "--dry-run"))
    assert (code, out) == (
        0,
        "would delete 0 finished jobs past retention\n"
        "would delete 0 ended flows with no step left\n",
    )


def test_a_missing_database_is_one_clear_line_not_a_new_file(tmp_path, capsys):
    missing = tmp_path / "typo.db"
    assert main(["status", "--db", f"sqlite:///{missing}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jobdef status: error: no job database at")
    assert err.count("\n") == 1
    assert not missing.exists()
    assert main(["jobs", "--db", f"sqlite:///{tmp_path}/no/such/folder.db"]) == 2
    assert "does not exist; create it" in capsys.readouterr().err


def test_enqueue_on_a_database_without_jobdef_tables_creates_nothing(tmp_path, capsys):
    app = tmp_path / "app.db"
    sqlite3.connect(app).close()
    url = f"sqlite:///{app}"
    assert main(_sheets("enqueue", "noop", "--args", '{"n": 1}', "--db", url)) == 2
    err = capsys.readouterr().err
    assert err == (
        f"jobdef enqueue: error: no jobdef tables in {app}; "
        f"run `jobdef db upgrade --db {url}` or start a worker\n"
    )
    with sqlite3.connect(app) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    missing = tmp_path / "typo.db"
    assert main(_sheets("enqueue", "noop", "--db", f"sqlite:///{missing}")) == 2
    assert "no job database at" in capsys.readouterr().err
    assert not missing.exists()


def test_db_upgrade_creates_the_database(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert main(["db", "upgrade", "--db", url]) == 0
    assert "created tables at version" in capsys.readouterr().out
    assert main(["status", "--db", url]) == 0
    assert capsys.readouterr().out == "no jobs\n"


def test_database_comes_from_the_environment(tmp_path, capsys, monkeypatch):
    url = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("JOBDEF_DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)
    assert main(["db", "upgrade"]) == 0
    assert url in capsys.readouterr().out


@pytest.mark.slow
def test_demo_runs_from_any_directory_and_passes_its_checks(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "jobdef", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all 6 checks passed" in result.stdout
    assert "reclaimed" in result.stdout
    assert "Traceback" not in result.stderr


def test_the_cli_knows_every_job_state():
    from typing import get_args

    from jobdef.backends.records import State
    from jobdef.cli.runtime_options import JOB_STATES

    assert set(JOB_STATES) == set(get_args(State))
