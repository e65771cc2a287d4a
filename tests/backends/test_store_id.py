"""A store's own id (migration 0008): drawn once when its tables are made, read back the
same through every URL that reaches the store, different for another store."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend

HEX_ID = re.compile(r"^[0-9a-f]{32}$")


def _other_spelling(store: Any, tmp_path: Path) -> str:
    """Another URL of the same store: a symlinked relative path, or localhost."""
    if store.url.startswith("sqlite:///"):
        link = tmp_path / "link"
        link.symlink_to(tmp_path, target_is_directory=True)
        relative = os.path.relpath(link / "jobs.db", Path.cwd())
        return f"sqlite:///{relative}"
    assert "@127.0.0.1:" in store.url, store.url
    return store.url.replace("@127.0.0.1:", "@localhost:", 1)


def test_the_store_id_is_the_same_through_another_spelling_of_its_url(
    backend: Backend, store: Any, tmp_path: Path
) -> None:
    found = backend.store_id()
    assert HEX_ID.match(found), found
    other = open_backend(_other_spelling(store, tmp_path), create=False, migrate=False)
    try:
        assert other.store_id() == found
    finally:
        other.close()
    backend.migrate()  # a migration that finds nothing to do draws no new id
    assert backend.store_id() == found


def test_two_stores_have_two_ids(backend: Backend, store: Any, tmp_path: Path) -> None:
    if store.url.startswith("sqlite:///"):
        other = open_backend(f"sqlite:///{tmp_path / 'other.db'}")
        try:
            assert other.store_id() != backend.store_id()
        finally:
            other.close()
        return
    import psycopg

    base, _, schema = store.url.partition("?schema=")
    second = f"{schema}_other"
    try:
        other = open_backend(f"{base}?schema={second}")  # the same database, another schema
        try:
            assert other.store_id() != backend.store_id()
        finally:
            other.close()
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{second}" CASCADE')
