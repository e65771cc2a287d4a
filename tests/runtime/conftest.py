"""Runtime fixtures: the test sheets, a job database, and worker processes to start and kill.

What test modules import lives in ``runtime_workers`` (``from conftest import ...``
would find whichever folder's conftest came first on ``sys.path``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import ledger_handlers
import pytest
from runtime_workers import SHEETS, Workers

from jobdef.policy.registry import Registry
from jobdef.sheets.pipeline import load_registry


@pytest.fixture
def registry() -> Registry:
    return load_registry([SHEETS])


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(db_url, tmp_path)
    yield started
    started.stop_all()


@pytest.fixture
def ledger(tmp_path: Path) -> str:
    """A ledger file (``ledger_handlers``) the handlers append each run to, outside the
    job database."""
    path = str(tmp_path / "ledger.db")
    ledger_handlers.create(path)
    return path
