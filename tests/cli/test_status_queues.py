"""`jobdef status` ends with one row per queue: depth, running, oldest wait, pause, limits."""

from __future__ import annotations

import json
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


def test_json_of_status_and_queues_holds_the_limits_the_text_shows(
    tmp_path: Path, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    backend.enqueue([NewJob("export_csv", {"n": 1}, "exports")])
    backend.enqueue([NewJob("send_reservation_mail", {"reservation_id": 1}, "mail")])
    backend.close()
    sheets = ["--db", url, "--sheets", str(example_sheets)]

    assert main(["status", *sheets, "--format", "json"]) == 0
    status = {q["queue"]: q for q in json.loads(capsys.readouterr().out)["queues"]}
    assert (status["exports"]["concurrency"], status["exports"]["rate"]) == (2, None)
    assert (status["mail"]["rate"], status["mail"]["rate_per_second"]) == ("100/m", 100 / 60)
    assert status["mail"]["queued"] == 1

    assert main(["queues", *sheets, "--format", "json"]) == 0
    listed = {q["queue"]: q for q in json.loads(capsys.readouterr().out)["queues"]}
    ages = ("oldest_queued_age",)  # read at another moment
    assert {k: v for k, v in listed["mail"].items() if k not in ages} == {
        k: v for k, v in status["mail"].items() if k not in ages
    }
    assert "batch" in listed  # the listing shows queues only the sheets name, as the text does
    assert main(["queues", "list", *sheets, "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)["queues"]
    assert [q["queue"] for q in again] == list(listed)


def test_jobs_and_requeue_take_sheets_and_note_an_unknown_job(
    tmp_path: Path, example_sheets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    sheets = ["--db", url, "--sheets", str(example_sheets)]
    assert main(["jobs", *sheets, "--job", "export_csv"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["jobs", *sheets, "--job", "export_cvs", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == []
    assert "no sheet in" in captured.err
    assert "defines a job named 'export_cvs'" in captured.err
    assert main(["requeue", *sheets, "--job", "export_cvs"]) == 1
    assert "defines a job named 'export_cvs'" in capsys.readouterr().err
