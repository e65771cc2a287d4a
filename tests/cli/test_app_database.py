"""jobdef in the application's own SQLite database, beside tables named like its own.

The application already has `jobs` and `attempts` tables with rows: `jobdef db
upgrade` adds the jobdef_ tables next to them, a real `jobdef worker --burst`
process runs jobs (one retried, one recording its idempotency key in the same
database), and the application's tables and rows are exactly as they were.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.cli import main

SRC = Path(__file__).resolve().parent.parent.parent / "src"

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: greet
handler: app_handlers:greet
max_attempts: 2
backoff: {strategy: fixed, initial: 0s, jitter: none}
errors: {default: retry}
args:
  n: {type: integer}
idempotency: {key: "greet-{n}"}
"""

HANDLERS = '''\
import sqlite3

from jobdef import first_run


def greet(ctx, n):
    """Fails the first attempt of n=1; records its key in the application's database."""
    if n == 1 and ctx.attempt == 1:
        raise ConnectionError("the first attempt of greet 1 fails")
    conn = sqlite3.connect(ctx.database_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        first_run(ctx, conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
'''

APP_SCHEMA = """
CREATE TABLE jobs (id INTEGER PRIMARY KEY, title TEXT NOT NULL, state TEXT NOT NULL);
CREATE TABLE attempts (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, note TEXT);
CREATE INDEX jobs_claim ON jobs (state);
INSERT INTO jobs (title, state) VALUES ('write the report', 'queued'), ('ship', 'done');
INSERT INTO attempts (job_id, note) VALUES (1, 'started'), (2, 'finished');
"""


def _app_tables(path: Path) -> dict[str, object]:
    conn = sqlite3.connect(path)
    try:
        return {
            "schema": conn.execute(
                "SELECT type, name, sql FROM sqlite_master "
                "WHERE name NOT LIKE 'jobdef%' AND name NOT LIKE 'sqlite%' ORDER BY name"
            ).fetchall(),
            "jobs": conn.execute("SELECT * FROM jobs ORDER BY id").fetchall(),
            "attempts": conn.execute("SELECT * FROM attempts ORDER BY id").fetchall(),
        }
    finally:
        conn.close()


@pytest.mark.slow
def test_upgrade_then_a_worker_run_jobs_beside_the_applications_own_tables(
    tmp_path: Path,
) -> None:
    app = tmp_path / "app.db"
    conn = sqlite3.connect(app)
    conn.executescript(APP_SCHEMA)
    conn.close()
    before = _app_tables(app)
    (tmp_path / "sheets").mkdir()
    (tmp_path / "sheets" / "greet.yaml").write_text(SHEET)
    (tmp_path / "app_handlers.py").write_text(textwrap.dedent(HANDLERS))
    url = f"sqlite:///{app}"
    sheets = ["--sheets", str(tmp_path / "sheets")]

    assert main(["db", "upgrade", "--db", url]) == 0
    for n in (1, 2):
        assert main(["enqueue", "greet", "--args", f'{{"n": {n}}}', "--db", url, *sheets]) == 0
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(SRC)])}
    worker = subprocess.run(
        [sys.executable, "-m", "jobdef", "worker", "--burst", "--db", url, *sheets],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert worker.returncode == 0, worker.stdout + worker.stderr

    assert _app_tables(app) == before
    backend = open_backend(url, create=False)
    try:
        records = backend.list_jobs()
        assert sorted((r.job, r.state, r.attempt) for r in records) == [
            ("greet", "done", 1),
            ("greet", "done", 2),
        ]
        first = next(r for r in records if r.attempt == 2)
        assert [a.outcome for a in backend.attempts(first.id)] == ["retry", "done"]
    finally:
        backend.close()
    conn = sqlite3.connect(app)
    keys = sorted(row[0] for row in conn.execute("SELECT key FROM jobdef_processed_keys"))
    conn.close()
    assert len(keys) == 2
