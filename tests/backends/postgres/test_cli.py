"""The CLI pointed at PostgreSQL, as a new user would run it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.cli import main

from .sheets import write_sheets


def test_db_upgrade_enqueue_worker_and_status_on_postgresql(
    postgres_url: str, postgres_schema: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{postgres_url}?schema={postgres_schema}"
    sheets = str(write_sheets(tmp_path / "jobdefs"))
    assert main(["db", "upgrade", "--db", url]) == 0
    assert main(["enqueue", "noop", "--args", '{"n": 1}', "--db", url, "--sheets", sheets]) == 0
    assert main(["worker", "--burst", "--no-migrate", "--db", url, "--sheets", sheets]) == 0
    capsys.readouterr()
    assert main(["status", "--db", url]) == 0
    assert "noop" in capsys.readouterr().out


def test_a_worker_with_no_migrate_on_an_empty_schema_says_to_run_db_upgrade(
    postgres_url: str, postgres_schema: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{postgres_url}?schema={postgres_schema}"
    sheets = str(write_sheets(tmp_path / "jobdefs"))
    assert main(["worker", "--burst", "--no-migrate", "--db", url, "--sheets", sheets]) == 2
    error = capsys.readouterr().err
    assert "run `jobdef db upgrade`" in error
    assert error.count("\n") == 1


def test_a_missing_database_is_one_line_from_any_command(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres_url.rsplit("/", 1)[0] + "/jobdef_no_such_db"
    assert main(["status", "--db", url]) == 2
    error = capsys.readouterr().err
    assert "database 'jobdef_no_such_db' does not exist; create it" in error
    assert error.count("\n") == 1
