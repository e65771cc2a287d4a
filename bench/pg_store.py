"""The PostgreSQL stores of the benches: a database or a schema each, made fresh and
dropped after, and the one-job sheet they queue (a handler that does nothing).

Imported by its siblings (``python bench/x.py`` puts this folder on the path)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg


def noop_sheet(handler: str) -> str:
    """The sheet of the job ``noop``, run by ``handler`` (``module:function``)."""
    return f"""\
apiVersion: jobdef/v1
kind: Job
name: noop
handler: {handler}
owner: bench
queue: default
max_attempts: 3
backoff: {{strategy: fixed, initial: 1s}}
timeout: 60s
errors: {{default: retry}}
on_reclaim: retry
retention: {{done: 30d, dead: until_resolved}}
args:
  n: {{type: integer, required: false}}
"""


def database_url(server_url: str, system: str) -> str:
    """The URL of the bench database of ``system`` on the server of ``server_url``."""
    parts = urlsplit(server_url)
    name = f"{parts.path.lstrip('/') or 'postgres'}_bench_{system}"
    return urlunsplit(parts._replace(path="/" + name))


def fresh_database(server_url: str, url: str) -> None:
    """Drop the database of ``url`` if it is there and create it empty."""
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(server_url: str, url: str) -> None:
    """Drop the database of ``url`` (its sessions too) if it is there."""
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def drop_schema(server_url: str, schema: str) -> None:
    """Drop ``schema`` and all in it, if it is there."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
