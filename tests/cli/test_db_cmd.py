"""Only `jobdef db upgrade` (and a starting worker) create or migrate the jobdef tables.

The operator commands pointed at a database without jobdef tables, or with
older ones, say so in one line and leave the file exactly as it was; `jobdef db
upgrade` says what it did and `jobdef db status` what is left to do.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.postgres import engine as postgres_engine
from jobdef.backends.records import NewJob
from jobdef.backends.sql import migration_files
from jobdef.backends.sqlite import engine as sqlite_engine
from jobdef.cli import main

FIRST = 4  # the SQLite engine's first migration
# The newest migration shipped: the messages name it, whatever its number is today.
LATEST = migration_files(sqlite_engine.MIGRATIONS)[-1][0]
# PostgreSQL's: an engine may ship a step the other has no counterpart for.
LATEST_POSTGRES = migration_files(postgres_engine.MIGRATIONS)[-1][0]


def _pending(package: str, *, after: int) -> list[str]:
    """The lines `jobdef db status` lists for the migrations after version ``after``."""
    return [
        f"  {name.removesuffix('.sql')}" for v, name, _ in migration_files(package) if v > after
    ]


def _app_database(path: Path) -> Path:
    """An application's own database, with a `jobs` table of its own."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, title TEXT)")
        conn.execute("INSERT INTO jobs (title) VALUES ('write the report')")
    conn.close()
    return path


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def _read_commands(url: str, sheets: Path) -> list[list[str]]:
    common = ["--db", url]
    return [
        ["status", *common],
        ["jobs", *common],
        ["jobs", "show", "1", *common],
        ["queues", *common, "--sheets", str(sheets)],
        ["queues", "pause", "mail", *common, "--sheets", str(sheets)],
        ["requeue", "1", *common],
        ["cancel", "1", *common],
        ["resolve", "1", "--note", "done by hand", *common],
        ["prune", *common, "--sheets", str(sheets)],
    ]


def test_read_commands_on_a_database_without_jobdef_tables_say_so_and_change_nothing(
    tmp_path: Path, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _app_database(tmp_path / "app.db")
    before = _files(tmp_path)
    url = f"sqlite:///{tmp_path / 'app.db'}"
    for command in _read_commands(url, example_sheets):
        assert main(command) == 2, command
        assert capsys.readouterr().err == (
            f"jobdef {command[0]}: error: no jobdef tables in {tmp_path / 'app.db'}; "
            f"run `jobdef db upgrade --db {url}` or start a worker\n"
        )
        assert _files(tmp_path) == before, command


def test_read_commands_on_tables_of_an_older_version_say_to_upgrade_and_migrate_nothing(
    older_store: Path, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{older_store}"
    before = _files(older_store.parent)
    for command in _read_commands(url, example_sheets):
        assert main(command) == 2, command
        assert capsys.readouterr().err == (
            f"jobdef {command[0]}: error: the jobdef tables in {older_store} are at version "
            f"{FIRST} and this jobdef needs version {LATEST}; run `jobdef db upgrade --db {url}` "
            "or start a worker\n"
        )
    assert _files(older_store.parent) == before


@pytest.fixture
def older_store(tmp_path: Path) -> Path:
    """A store an older jobdef made: at the SQLite engine's first migration, with a job
    of queue ``mail``."""
    path = tmp_path / "old.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite_engine, "migration_files", lambda p: migration_files(p)[:1])
        open_backend(f"sqlite:///{path}").close()
    # Stored as that release's enqueue did: today's writes the receipt, a later column.
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "INSERT INTO jobdef_jobs (job, queue, args, state, max_attempts, run_after,"
            " created_at, updated_at) VALUES ('send_reservation_mail', 'mail', '{}', 'queued',"
            " 1, 0, 0, 0)"
        )
    return path


def test_db_upgrade_says_what_it_did(
    tmp_path: Path, older_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = f"sqlite:///{_app_database(tmp_path / 'app.db')}"
    assert main(["db", "upgrade", "--db", app]) == 0
    assert capsys.readouterr().out == f"job database {app}: created tables at version {LATEST}\n"
    assert main(["db", "upgrade", "--db", app]) == 0
    assert capsys.readouterr().out == f"job database {app}: already at version {LATEST}\n"
    old = f"sqlite:///{older_store}"
    assert main(["db", "upgrade", "--db", old]) == 0
    assert capsys.readouterr().out == f"job database {old}: upgraded {FIRST} -> {LATEST}\n"
    assert main(["status", "--db", old]) == 0
    assert "mail" in capsys.readouterr().out


def test_db_status_shows_the_versions_and_the_pending_migrations_and_changes_nothing(
    tmp_path: Path, older_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = f"sqlite:///{_app_database(tmp_path / 'app.db')}"
    before = _files(tmp_path)
    assert main(["db", "status", "--db", app]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"job database {app}",
        "current version: 0 (no jobdef tables)",
        f"latest version: {LATEST}",
        "pending migrations (`jobdef db upgrade` applies them):",
        *_pending(sqlite_engine.MIGRATIONS, after=0),
    ]
    old = f"sqlite:///{older_store}"
    assert main(["db", "status", "--db", old]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"current version: {FIRST}",
        f"latest version: {LATEST}",
        "pending migrations (`jobdef db upgrade` applies them):",
        *_pending(sqlite_engine.MIGRATIONS, after=FIRST),
    ]
    assert _files(tmp_path) == before
    main(["db", "upgrade", "--db", app])
    capsys.readouterr()
    assert main(["db", "status", "--db", app]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"current version: {LATEST}",
        f"latest version: {LATEST}",
        "pending migrations: none",
    ]


def test_an_upgraded_application_database_keeps_its_own_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _app_database(tmp_path / "app.db")
    url = f"sqlite:///{path}"
    assert main(["db", "upgrade", "--db", url]) == 0
    backend = open_backend(url, create=False)
    [job] = backend.enqueue([NewJob(job="send_reservation_mail", args={}, queue="mail")])
    backend.close()
    assert main(["jobs", "show", str(job.id), "--db", url]) == 0
    assert "send_reservation_mail" in capsys.readouterr().out
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT id, title FROM jobs").fetchall() == [(1, "write the report")]
    conn.close()


def test_db_commands_on_postgresql_never_print_the_password(
    postgres_url: str, postgres_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with_password = postgres_url.replace("://postgres@", "://postgres:s3cret@", 1)
    assert with_password != postgres_url, "the test server's URL names no user postgres"
    url = f"{with_password}?schema={postgres_schema}"
    shown = url.replace(":s3cret@", ":***@")
    assert main(["status", "--db", url]) == 2
    assert capsys.readouterr().err == (
        f"jobdef status: error: no jobdef tables in schema '{postgres_schema}' at "
        f"postgres@{postgres_url.split('@', 1)[1]}; run `jobdef db upgrade --db {shown}` "
        "or start a worker\n"
    )
    assert main(["db", "status", "--db", url]) == 0
    status = capsys.readouterr().out
    assert status.splitlines()[1:] == [
        "current version: 0 (no jobdef tables)",
        f"latest version: {LATEST_POSTGRES}",
        "pending migrations (`jobdef db upgrade` applies them):",
        *_pending(postgres_engine.MIGRATIONS, after=0),
    ]
    assert main(["db", "upgrade", "--db", url]) == 0
    upgraded = capsys.readouterr().out
    assert upgraded == f"job database {shown}: created tables at version {LATEST_POSTGRES}\n"
    assert main(["db", "upgrade", "--db", url]) == 0
    assert "already at version" in capsys.readouterr().out
    assert main(["status", "--db", url]) == 0
    assert "s3cret" not in status + upgraded + capsys.readouterr().out


SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: tick
handler: os.path:join
max_attempts: 1
timeout: 10s
errors: {default: fatal}
retention: {done: 1h, dead: 1d}
"""


@pytest.mark.slow
def test_a_worker_with_no_migrate_on_a_database_without_jobdef_tables_says_to_upgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{_app_database(tmp_path / 'app.db')}"
    (tmp_path / "sheets").mkdir()
    (tmp_path / "sheets" / "tick.yaml").write_text(SHEET)
    sheets = str(tmp_path / "sheets")
    command = ["worker", "--burst", "--no-migrate", "--db", url, "--sheets", sheets]
    assert main(command) == 2
    assert capsys.readouterr().err == (
        f"jobdef worker: error: no jobdef tables in {tmp_path / 'app.db'}; "
        f"run `jobdef db upgrade --db {url}` or start a worker\n"
    )
    assert _query_tables(tmp_path / "app.db") == ["jobs"]


def _query_tables(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    finally:
        conn.close()
