"""``jobdef workers``: real workers register, beat, are marked stale when frozen (SIGSTOP)
and leave the table when they stop; stale rows are pruned by the retention service."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.workers import WorkerInfo
from jobdef.cli import main
from support import eventually
from support.workers import WorkerProcess, start_process, worker_command, worker_env

HERE = Path(__file__).resolve().parent
SHEETS = HERE.parent / "telemetry" / "sheets"


def workers_json(db_url: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(["workers", "--db", db_url, "--format", "json"]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)["workers"]
    return rows


def start_worker(db_url: str, tmp_path: Path) -> WorkerProcess:
    command = worker_command(
        db_url, SHEETS, "--lease", "1s", "--queues", "default,later", "--async-per-process", "3"
    )
    return start_process(command, tmp_path / "w.log", env=worker_env(SHEETS.parent))


@pytest.mark.slow
def test_a_frozen_worker_is_stale_and_a_stopped_one_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db_url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(db_url).close()  # the store exists before `jobdef workers` reads it
    worker = start_worker(db_url, tmp_path)
    process = worker.process
    try:
        [row] = eventually(lambda: workers_json(db_url, capsys), 30, "the worker's row")
        assert (row["pid"], row["queues"], row["concurrency"]) == (
            process.pid,
            ["default", "later"],
            3,  # one handler process running up to 3 coroutine handlers: 3 jobs at once
        )
        assert row["stale"] is False
        assert str(row["id"]).split(":")[1] == str(process.pid)
        first = row["last_beat"]
        eventually(lambda: workers_json(db_url, capsys)[0]["last_beat"] != first, 10, "a beat")

        process.send_signal(signal.SIGSTOP)
        eventually(lambda: workers_json(db_url, capsys)[0]["stale"], 10, "the row to go stale")
        assert main(["workers", "--db", db_url]) == 0
        table = capsys.readouterr().out.splitlines()
        assert table[0].split()[:3] == ["WORKER", "STATE", "HOST"]
        assert table[1].split()[1] == "stale"

        process.send_signal(signal.SIGCONT)
        eventually(lambda: not workers_json(db_url, capsys)[0]["stale"], 10, "alive again")
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert workers_json(db_url, capsys) == []
    finally:
        worker.kill()


def test_running_jobs_are_listed_and_stale_rows_are_pruned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobdef.backends.records import ClaimOptions, NewJob

    db_url = f"sqlite:///{tmp_path / 'jobs.db'}"
    clock = [1000.0]
    backend = open_backend(db_url, clock=lambda: clock[0])
    try:
        info = WorkerInfo("host:1:abc", "host", 1, None, 4, 30.0, "1.0", 0.0, 0.0)
        backend.register_worker(info)
        backend.register_worker(
            WorkerInfo("host:2:def", "host", 2, ("mail",), 1, 30.0, "1.0", 0.0, 0.0)
        )
        backend.enqueue([NewJob("j", {}, "default"), NewJob("j", {}, "default")])
        backend.claim(ClaimOptions(worker_id="host:1:abc", lease_seconds=30, limit=2))
        clock[0] += 31
        assert backend.beat_worker("host:2:def")
        [one, two] = backend.workers()
        assert (one.running, one.stale(clock[0])) == ((1, 2), True)
        assert (two.running, two.stale(clock[0]), two.queues) == ((), False, ("mail",))
        assert backend.prune_workers(older_than=30) == 1
        assert [w.id for w in backend.workers()] == ["host:2:def"]
        assert not backend.beat_worker("host:1:abc")  # gone: the worker writes it again
    finally:
        backend.close()
    assert main(["workers", "--db", db_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[1].split()[:2] == ["host:2:def", "stale"]


def queues_column(text: str) -> dict[str, str]:
    """The text table's QUEUES cell of each worker, by pid (cells may hold spaces)."""
    header, *rows = text.splitlines()
    start, end = header.index("QUEUES"), header.index("CONC")
    pid_start, pid_end = header.index("PID"), start
    return {row[pid_start:pid_end].strip(): row[start:end].strip() for row in rows}


@pytest.mark.slow
def test_a_worker_of_every_queue_and_one_of_the_queue_all_print_differently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``all`` is a valid queue name: the table must not print it for every queue."""
    from jobdef.cli.workers_cmd import EVERY_QUEUE
    from jobdef.sheets.schema_check import schema

    definitions = schema()["definitions"]
    for pattern in (
        definitions["Job"]["properties"]["queue"]["pattern"],
        definitions["Queue"]["properties"]["name"]["pattern"],
    ):
        assert re.fullmatch(pattern, "all")
        assert not re.search(pattern, EVERY_QUEUE)

    db_url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(db_url).close()
    env = worker_env(SHEETS.parent)
    every = start_process(worker_command(db_url, SHEETS), tmp_path / "every.log", env=env)
    named = start_process(
        worker_command(db_url, SHEETS, "--queues", "all"), tmp_path / "all.log", env=env
    )
    try:
        every.wait_up()  # a worker that exits at start fails here, with its log
        named.wait_up()

        def both() -> dict[object, dict[str, object]]:
            found = {row["pid"]: row for row in workers_json(db_url, capsys)}
            return found if len(found) == 2 else {}

        rows = eventually(both, 60, "both workers' rows")
        assert (rows[every.pid]["all_queues"], rows[every.pid]["queues"]) == (True, None)
        assert (rows[named.pid]["all_queues"], rows[named.pid]["queues"]) == (False, ["all"])

        assert main(["workers", "--db", db_url]) == 0
        cells = queues_column(capsys.readouterr().out)
        assert cells == {str(every.pid): "(every queue)", str(named.pid): "all"}
        for worker in (every, named):
            assert worker.stop() == 0, worker.log()
    finally:
        every.kill()
        named.kill()
