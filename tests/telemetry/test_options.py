"""The worker's telemetry options refuse what would not work with one line each."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from jobdef.cli import main

SHEETS = Path(__file__).resolve().parent / "sheets"


def run_worker(db_url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["worker", "--db", db_url, "--sheets", str(SHEETS), "--burst", *extra])
    return code, capsys.readouterr().err


def test_a_port_in_use_is_one_line(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        code, err = run_worker(db_url, capsys, "--health-port", port)
    assert code == 2
    assert err.splitlines()[-1] == (
        f"jobdef worker: error: --health-port {port}: cannot listen on 127.0.0.1 "
        "(Address already in use); choose a free port"
    )
    assert "Traceback" not in err


def test_gauges_read_more_often_than_once_a_second_are_refused(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_worker(db_url, capsys, "--metrics-port", "0", "--metrics-interval", "100ms")
    assert code == 2
    assert "--metrics-interval 100ms is too short" in err
    assert "write 1s or more (15s by default)" in err


@pytest.mark.parametrize("value", ["-1", "65536", "http"])
def test_a_port_out_of_range_is_refused_by_the_parser(
    db_url: str, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        run_worker(db_url, capsys, "--metrics-port", value)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"argument --metrics-port: expected a whole number from 0 to 65,535, got {value!r}" in err
    )
    assert len(err.strip().splitlines()) == 1, err


def test_a_health_file_that_cannot_be_written_is_one_line(
    db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "no" / "such" / "alive"
    code, err = run_worker(db_url, capsys, "--health-file", str(missing))
    assert code == 2
    assert err.splitlines()[-1].startswith(f"jobdef worker: error: --health-file {missing}: ")
    assert "give a path in a folder the worker can write to" in err


@pytest.mark.parametrize("value", ["a" * 64, "x" * 300, "ex ample", "\udcff", "a\x1bb", ""])
@pytest.mark.parametrize("option", ["--health-host", "--metrics-host"])
def test_a_host_that_names_nothing_is_refused_by_the_parser(
    db_url: str, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    """Before any resolver sees it: the resolver raises UnicodeError on a label too long
    or a byte that is not text, which would be a traceback."""
    with pytest.raises(SystemExit) as exited:
        run_worker(db_url, capsys, option, value, "--health-port", "0")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: expected an address or a host name to listen on" in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
