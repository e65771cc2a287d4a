"""`jobdef status` ends with one row per queue: depth, running, oldest wait, pause, limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.cli import main


def test_status_shows_every_queue_with_depth_running_age_pause_and_limits(
    tmp_path: Path, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    backend.enqueue([NewJob("export_csv", {"n": n}, "exports") for n in range(3)])
    backend.enqueue([NewJob("send_reservation_mail", {"reservation_id": 1}, "mail")])
    backend.claim(ClaimOptions("w1", lease_seconds=60, limit=1, queues=["exports"]))
    backend.set_paused("mail", True)
    backend.close()

    assert main(["status", "--db", url, "--sheets", str(example_sheets)]) == 0
    out = capsys.readouterr().out
    section = out[out.index("\nQUEUE") + 1 :].splitlines()
    assert section[0].split() == [
        "QUEUE", "STATE", "QUEUED", "RUNNING", "OLDEST", "WAITING", "CONCURRENCY", "RATE"
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in section[1:]}
    assert rows["exports"][:3] == ["active", "2", "1"]
    assert rows["exports"][-2:] == ["2", "-"]
    assert rows["mail"][:3] == ["paused", "1", "0"]
    assert rows["mail"][-1] == "100/m"
    assert "batch" not in rows  # named by a sheet, but without jobs or a pause


def test_status_of_an_empty_store_has_no_queue_section(
    tmp_path: Path, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    assert main(["status", "--db", url, "--sheets", str(example_sheets)]) == 0
    assert capsys.readouterr().out == "no jobs\n"
