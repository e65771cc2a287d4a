"""A small jobdef project for the hostile-input tests, and the secrets none of its output may hold.

The project lives in a temporary folder: sheets with one job whose handler
fails with whatever text it is given (after reporting that text as progress),
a webhook channel whose URL and Authorization header come from ``*_env``
variables, and a real SQLite store. ``hostile_env`` is the environment every
command runs with: HOME inside the folder and every secret of the project set,
so a test can look for each one in anything printed or stored.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Every value below is a secret: none may appear in any output, log line or stored row.
DB_PASSWORD = "dbpw-Hunter2-x9"
HOOK_TOKEN = "tok-HOOKSECRET-7"
URL_TOKEN = "urltok-SECRET-5"
ENV_SECRET = "envsecret-TOPSECRET-3"
QUERY_PASSWORD = "qpw-SECRET-8"
SLASH_PASSWORD_PIECE = "slashpw-SECRET"  # before an unencoded '/' in a password
SECRETS: tuple[str, ...] = (
    DB_PASSWORD,
    HOOK_TOKEN,
    URL_TOKEN,
    ENV_SECRET,
    QUERY_PASSWORD,
    SLASH_PASSWORD_PIECE,
)

HOOK_URL_ENV = "HOSTILE_HOOK_URL"
HOOK_TOKEN_ENV = "HOSTILE_HOOK_TOKEN"

SHEETS = f"""\
apiVersion: jobdef/v1
kind: Channel
name: ops
type: webhook
url_env: {HOOK_URL_ENV}
headers_env: {{Authorization: {HOOK_TOKEN_ENV}}}
format: json
timeout: 2s
---
apiVersion: jobdef/v1
kind: Job
name: hostile
title: A job that fails with the text it is given
owner: test-team
handler: hostile_handlers:fail
queue: default
args:
  text: {{type: string}}
max_attempts: 1
timeout: 30s
idempotency: {{key: "{{text}}"}}
errors:
  default: fatal
notify: {{channel: ops, events: [dead]}}
rerun: jobdef requeue --job hostile --state dead
"""

HANDLERS = '''\
"""Handlers of the hostile-input tests: report the text as progress, then fail with it."""

import os


def fail(ctx, text):
    ctx.heartbeat({"step": text, "secret_free": True})
    ctx.heartbeat(text)
    # The message quotes a URL holding every kind of secret jobdef must redact.
    raise RuntimeError(
        f"{text} | postgresql://app:{os.environ['HOSTILE_DB_PASSWORD']}@db.internal/app"
        f" | https://hooks.example/x?token={os.environ['HOSTILE_URL_TOKEN']}"
        f"&password={os.environ['HOSTILE_QUERY_PASSWORD']}"
        f" | ctx={ctx!r} | {text}"
    )
'''


def write_project(root: Path) -> Path:
    """The project under ``root`` (sheets, handlers, pyproject); returns ``root``."""
    (root / "jobdefs").mkdir(parents=True, exist_ok=True)
    (root / "jobdefs" / "jobs.yaml").write_text(SHEETS, encoding="utf-8")
    (root / "hostile_handlers.py").write_text(HANDLERS, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [tool.jobdef]
            sheets = "jobdefs"
            database = "sqlite:///jobs.db"
            """
        ),
        encoding="utf-8",
    )
    (root / "home").mkdir(exist_ok=True)
    return root


def hostile_env(root: Path, hook_url: str = "http://127.0.0.1:1/hook") -> dict[str, str]:
    """The environment of every command: HOME in ``root``, the project's secrets set."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("JOBDEF_", "HOSTILE_"))
    }
    separator = "&" if "?" in hook_url else "?"
    env.update(
        {
            "HOME": str(root / "home"),
            "JOBDEF_DATABASE_URL": f"sqlite:///{root / 'jobs.db'}",
            "JOBDEF_TEST_SECRET": ENV_SECRET,
            "HOSTILE_DB_PASSWORD": DB_PASSWORD,
            "HOSTILE_URL_TOKEN": URL_TOKEN,
            "HOSTILE_QUERY_PASSWORD": QUERY_PASSWORD,
            HOOK_URL_ENV: f"{hook_url}{separator}token={URL_TOKEN}",
            # A mounted secret file's trailing newline: stripped, never echoed.
            HOOK_TOKEN_ENV: f"Bearer {HOOK_TOKEN}\n",
            "PYTHONPATH": str(root),
        }
    )
    return env


def secret_db_urls() -> list[str]:
    """Database URLs holding a password, each pointing at nothing that answers."""
    return [
        f"postgresql://app:{DB_PASSWORD}@127.0.0.1:1/app",
        f"postgresql://app:{SLASH_PASSWORD_PIECE}/rest@127.0.0.1:1/app",
        f"mysql://admin:{DB_PASSWORD}@127.0.0.1:1/app",
        f"postgresql+psycopg://app:{DB_PASSWORD}@127.0.0.1:1/app",
        f"postgresql://app@127.0.0.1:1/app?password={QUERY_PASSWORD}",
    ]


def leaked(texts: Iterable[str]) -> list[str]:
    """The secrets found in any of ``texts``."""
    joined = "\n".join(texts)
    return [secret for secret in SECRETS if secret in joined]


def stored_rows(db: Path) -> list[str]:
    """Every row of every table of the SQLite store, as text (errors, payloads, progress)."""
    conn = sqlite3.connect(db)
    try:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        return [repr(row) for table in tables for row in conn.execute(f'SELECT * FROM "{table}"')]
    finally:
        conn.close()


def tree_listing(folder: Path) -> set[str]:
    """The paths of the files under ``folder``, but .git's internals and caches.

    Paths only, not sizes or times: other work may edit files of the tree
    meanwhile, while a command writing where it must not adds a file.
    """
    listing: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [
            d for d in dirnames if d not in {".git", ".hypothesis", "__pycache__", ".mypy_cache"}
        ]
        listing.update(str((Path(dirpath) / name).relative_to(folder)) for name in filenames)
    return listing


def run_jobdef(
    argv: list[str] | list[bytes],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m jobdef ARGV`` in a process of its own; output kept as bytes."""
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"jobdef", *(os.fsencode(a) for a in argv)],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        timeout=timeout,
        check=False,
    )
