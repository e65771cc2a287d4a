"""The job the adapters' sensitive-args tests run: its sheet and store, and a handler that
proves it got the value whole."""

from __future__ import annotations

import os
from pathlib import Path


def sign_in(user: str, password: str) -> None:
    Path(os.environ["JOBDEF_TEST_SEEN"]).write_text(f"{user}:{password}", encoding="utf-8")


SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: sign_in
handler: sensitive_acts:sign_in
queue: {queue}
args:
  user: {{type: string}}
  password: {{type: string, sensitive: true}}
max_attempts: 1
timeout: 30s
errors: {{default: fatal}}
"""


def sign_in_project(tmp_path: Path, queue: str) -> tuple[Path, str]:
    """The sheets folder of ``sign_in`` on ``queue``, and a fresh SQLite job database."""
    from jobdef.backends import open_backend

    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "sign_in.yaml").write_text(SHEET.format(queue=queue), encoding="utf-8")
    database = f"sqlite:///{tmp_path / 'jobdef.db'}"
    open_backend(database).close()
    return sheets, database
