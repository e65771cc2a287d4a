"""`jobdef queues`: list, pause and resume through the job store, errors without tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.cli import main


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    backend.enqueue([NewJob(job="send_reservation_mail", args={"reservation_id": 1}, queue="mail")])
    backend.close()
    return url


def test_pause_stops_claims_from_the_queue_and_resume_restores_them(
    db: str, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--db", db, "--sheets", str(example_sheets)]
    assert main(["queues", "pause", "mail", *common]) == 0
    assert "queue mail paused" in capsys.readouterr().out
    backend = open_backend(db)
    try:
        options = ClaimOptions(worker_id="w1", lease_seconds=30, limit=10)
        assert backend.claim(options) == []
        assert main(["queues", "resume", "mail", *common]) == 0
        assert "queue mail resumed" in capsys.readouterr().out
        assert [job.queue for job in backend.claim(options)] == ["mail"]
    finally:
        backend.close()


def test_list_shows_depth_pause_state_and_limits_of_every_queue(
    db: str, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queues", "pause", "exports", "--db", db, "--sheets", str(example_sheets)]) == 0
    capsys.readouterr()
    assert main(["queues", "--db", db, "--sheets", str(example_sheets)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "QUEUE", "STATE", "QUEUED", "RUNNING", "OLDEST", "WAITING", "CONCURRENCY", "RATE"
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["exports"] == ["paused", "0", "0", "-", "2", "-"]
    assert rows["mail"][:3] == ["active", "1", "0"]
    assert rows["mail"][-2:] == ["-", "100/m"]
    assert {"batch", "media", "points"} <= set(rows)  # named by jobs, without a Queue document


def test_options_before_the_action_count_too(
    db: str, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queues", "--db", db, "--sheets", str(example_sheets), "pause", "mail"]) == 0
    backend = open_backend(db)
    try:
        assert [q.paused for q in backend.queues() if q.queue == "mail"] == [True]
    finally:
        backend.close()


def test_a_sheet_with_errors_costs_only_the_limits_columns(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "broken.yaml").write_text("apiVersion: jobdef/v1\nkind: Queue\n", encoding="utf-8")
    assert main(["queues", "--db", db, "--sheets", str(sheets)]) == 0
    captured = capsys.readouterr()
    assert "queue limits not shown" in captured.err
    assert captured.out.splitlines()[1].split()[:3] == ["mail", "active", "1"]


def test_pausing_an_unknown_queue_names_the_known_ones(
    db: str, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queues", "pause", "mial", "--db", db, "--sheets", str(example_sheets)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jobdef queues: error: no queue named 'mial'")
    assert "mail" in err
    assert "Traceback" not in err


def test_a_missing_database_file_is_an_error_not_a_new_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"sqlite:///{tmp_path / 'nope.db'}"
    assert main(["queues", "--db", missing, "--sheets", str(tmp_path / "sheets")]) == 2
    assert "no job database" in capsys.readouterr().err
    assert not (tmp_path / "nope.db").exists()
