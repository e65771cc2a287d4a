"""The pytest plugin: the ``jobdef_queue`` fixture, its options and its marker.

It adds ``--jobdef-db`` and ``--jobdef-sheets`` (also ``jobdef_db`` and
``jobdef_sheets`` in the ini file), the ``jobdef`` marker and the fixture, and
nothing else: no hook runs for a test that does not ask for ``jobdef_queue``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a test asks for the fixture, not when pytest starts
    from jobdef.testing.queue import VirtualQueue

MARKER = (
    "jobdef(sheets=None, start=None, seed=0, timeout_scale=1.0): how the jobdef_queue "
    "fixture is built for this test (sheets folder, virtual start time, jitter seed, "
    "real seconds per second of a sheet's timeout)"
)
_MARK_KEYS = frozenset({"sheets", "start", "seed", "timeout_scale"})


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jobdef", "jobdef testing kit")
    group.addoption(
        "--jobdef-db",
        metavar="URL",
        default=None,
        help="run jobdef_queue on this PostgreSQL database, a fresh schema per test "
        "(default: ini jobdef_db, JOBDEF_TEST_DATABASE_URL, else a temporary SQLite file)",
    )
    group.addoption(
        "--jobdef-sheets",
        metavar="DIR",
        default=None,
        help="the sheets jobdef_queue loads (default: ini jobdef_sheets, JOBDEF_SHEETS, "
        "[tool.jobdef] sheets of the nearest pyproject.toml, else jobdefs)",
    )
    parser.addini("jobdef_db", "job database URL for jobdef_queue (see --jobdef-db)")
    parser.addini("jobdef_sheets", "sheets folder for jobdef_queue (see --jobdef-sheets)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


def _setting(config: pytest.Config, name: str, env: str | None = None) -> str | None:
    value = config.getoption(f"--jobdef-{name}") or config.getini(f"jobdef_{name}")
    if not value and env is not None:
        value = os.environ.get(env)
    return str(value) if value else None


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("jobdef")
    options = dict(marker.kwargs) if marker is not None else {}
    unknown = sorted(set(options) - _MARK_KEYS)
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.jobdef got unknown argument(s) {', '.join(unknown)}; "
            f"it takes {', '.join(sorted(_MARK_KEYS))}"
        )
    return options


@pytest.fixture
def jobdef_queue(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VirtualQueue]:
    """A :class:`~jobdef.testing.queue.VirtualQueue` on a store of this test's own."""
    from jobdef.testing.kit import open_queue

    options = _options(request)
    config = request.config
    sheets = options.pop("sheets", None) or _setting(config, "sheets")
    if sheets is not None and not Path(sheets).is_absolute():
        sheets = str(Path(config.rootpath) / sheets)
    db = _setting(config, "db", "JOBDEF_TEST_DATABASE_URL")
    queue = open_queue(sheets, db=db, folder=tmp_path, **options)
    try:
        yield queue
    finally:
        queue.close()
