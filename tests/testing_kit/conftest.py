"""The testing kit's tests. ``user_project`` is an application with tests of its own, run
by test_user_project.py in a pytest of its own, never collected by this suite."""

from __future__ import annotations

from pathlib import Path

import pytest

collect_ignore = ["user_project"]


@pytest.fixture
def examples_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder the example handlers write under (``$JOBDEF_EXAMPLES_DIR``), one per test.

    Not autouse: the modules that run the example handlers take it in their
    ``pytestmark``, so the other tests here (whose subprocesses inherit the
    environment) keep theirs as it is."""
    folder = tmp_path / "examples"
    monkeypatch.setenv("JOBDEF_EXAMPLES_DIR", str(folder))
    return folder
