"""`jobdef validate` and `jobdef enqueue` run without the cyclic garbage collector, and
leave it as they found it: main is also called in-process (these tests, an
application's code), whose collector must be on again after the command."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import open_backend
from jobdef.cli import main


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection the collector starts while the test runs."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def test_validate_runs_without_a_collection_and_turns_the_collector_on_again(
    example_sheets: Path, collections: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert gc.isenabled()
    assert main(["validate", str(example_sheets)]) == 0
    assert collections == []
    assert gc.isenabled()
    assert "no findings" in capsys.readouterr().out


def test_enqueue_runs_without_a_collection(
    tmp_path: Path, example_sheets: Path, collections: list[int]
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    collections.clear()  # the store's creation is not the command's
    argv = ["enqueue", "send_reservation_mail", "--args", '{"reservation_id": 1}']
    assert main([*argv, "--db", url, "--sheets", str(example_sheets)]) == 0
    assert collections == []
    assert gc.isenabled()
