"""`jobdef validate` and `jobdef enqueue` run without the cyclic garbage collector, and
leave it as they found it: main is also called in-process (these tests, an
application's code), whose collector must be on again after the command. A worker's
own process, and every handler process, leave what their start made out of its scans."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import open_backend
from jobdef.cli import main
from support.sheet_repo import write_project


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
    collections.clear()  # a collection of the fixtures' setup (capsys's) is not the command's
    assert main(["validate", str(example_sheets)]) == 0
    assert collections == []
    assert gc.isenabled()
    assert "no findings" in capsys.readouterr().out


# In a fresh interpreter, where validate's imports make most of what it allocates:
# prints how many collections the allocations after the command start.
AFTER_VALIDATE = """
import gc, sys
from jobdef.cli import main
started, returned = [], [False]
gc.callbacks.append(lambda phase, info: phase == "start" and returned[0] and started.append(1))
main(["validate", sys.argv[1]])
returned[0] = True
made_after = [[] for _ in range(100)]
print(len(started))
"""


def test_what_validate_made_is_left_to_no_collection_of_the_youngest(example_sheets: Path) -> None:
    """The objects the command made count as old once it returns: the first allocations
    after it do not start a collection of all of them."""
    result = subprocess.run(
        [sys.executable, "-c", AFTER_VALIDATE, str(example_sheets)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.strip().splitlines()[-1] == "0"


def test_what_the_process_froze_stays_frozen(
    example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker: list[int] = []  # a tracked object, frozen with the rest (a server that forks)
    gc.freeze()
    try:
        assert main(["validate", str(example_sheets)]) == 0
        # Frozen objects are in no generation the collector looks at.
        assert not any(found is marker for found in gc.get_objects())
    finally:
        gc.unfreeze()


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


# The process's own command line (main without argv, as the `jobdef` script calls it);
# then garbage in a cycle, which only a collection finds: its __del__ says whether the
# interpreter's exit looked for cycles.
AT_EXIT = """
import sys
from jobdef.cli import main

class Ring:
    def __init__(self):
        self.me = self

    def __del__(self):
        print("scanned at exit")

in_process = sys.argv[1] == "in-process"
sys.argv = ["jobdef", *sys.argv[2:]]
main(sys.argv[1:] if in_process else None)
Ring()
"""


@pytest.mark.parametrize(
    ("how", "options", "scanned"),
    [
        ("own", (), False),
        ("own", ("--check-imports",), True),  # the project's code ran: its cycles are found
        ("in-process", (), True),  # main called by other code: nothing changes at exit
    ],
)
def test_a_validate_process_exits_without_looking_for_cycles(
    example_sheets: Path, how: str, options: tuple[str, ...], scanned: bool
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", AT_EXIT, how, "validate", *options, str(example_sheets)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=example_sheets.parent,
    )
    assert ("scanned at exit" in result.stdout) is scanned


# A worker's process and its handler processes leave what their start made out of the
# collector's scans (gc.freeze); main called in-process leaves its caller's objects as
# they were. The handler returns its process's count of frozen objects.
WORKER = """
import gc, sys
from jobdef.cli import main
in_process = sys.argv[1] == "in-process"
sys.argv = ["jobdef", *sys.argv[2:]]
main(sys.argv[1:] if in_process else None)
print("frozen", gc.get_freeze_count())
"""
HANDLERS = """import gc
import weakref


class Ring:
    def __init__(self):
        self.me = self


# Garbage the import leaves: a cycle only the collector frees, even once frozen.
DROPPED = weakref.ref(Ring())


def charge_card(ctx, order_id):
    gc.collect()
    return {"frozen": gc.get_freeze_count(), "dropped_freed": DROPPED() is None}


def send_receipt(ctx, order_id):
    pass


def ship_order(ctx, order_id):
    pass
"""


@pytest.mark.parametrize("how", ["own", "in-process"])
def test_a_worker_and_its_handler_processes_freeze_what_their_start_made(
    tmp_path: Path, how: str
) -> None:
    sheets = write_project(tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "jobs.py").write_text(HANDLERS)
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    enqueue = ["enqueue", "charge_card", "--args", '{"order_id": 1}', "--db", url]
    open_backend(url).close()
    assert main([*enqueue, "--sheets", str(sheets)]) == 0
    worker = ["worker", "--burst", "--db", url, "--sheets", str(sheets)]
    result = subprocess.run(
        [sys.executable, "-c", WORKER, how, *worker, "--pythonpath", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=tmp_path,
    )
    frozen = int(result.stdout.split("frozen ")[-1])
    assert (frozen > 0) is (how == "own")
    backend = open_backend(url)
    try:
        (job,) = backend.list_jobs(state="done")
    finally:
        backend.close()
    # The handler process froze its start, however the worker ran, and not the garbage
    # the start left.
    assert job.result["frozen"] > 0
    assert job.result["dropped_freed"] is True
