"""Bad input to the job-store commands is one line and exit 2, never a traceback: ids out of
the 64-bit range, a corrupted SQLite file, a database URL that does not parse, a schema
name with a trailing line break."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from jobdef.cli import main

REPO = Path(__file__).resolve().parents[2]
SHEETS = REPO / "jobdefs"
POSTGRES_URL = os.environ.get(
    "JOBDEF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
TOO_BIG = "99999999999999999999999"


def _one_line(output: str) -> str:
    assert "Traceback" not in output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    return lines[0]


def _sqlite(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'jobdef.db'}"
    assert main(["db", "upgrade", "--db", url]) == 0
    return url


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "show", TOO_BIG],
        ["cancel", TOO_BIG],
        ["resolve", TOO_BIG, "--note", "handled"],
        ["requeue", TOO_BIG],
        ["jobs", "show", "-1"],
        ["cancel", "0"],
        ["cancel", "12abc"],
    ],
)
@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_an_id_outside_64_bits_is_refused_before_any_engine_sees_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], engine: str
) -> None:
    url = _sqlite(tmp_path) if engine == "sqlite" else POSTGRES_URL
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--db", url])
    assert exited.value.code == 2
    line = _one_line(capsys.readouterr().err)  # no usage lines either
    assert "is not a job id" in line
    assert "9223372036854775807" in line


def test_the_largest_id_reaches_sqlite_and_is_simply_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _sqlite(tmp_path)
    capsys.readouterr()
    assert main(["jobs", "show", str(2**63 - 1), "--db", url]) == 2
    assert "no job with id" in _one_line(capsys.readouterr().err)


def _corrupt(url: str) -> Path:
    """Every page of the real database file but the first (the header and the schema)
    overwritten with garbage, as a disk or a careless copy might leave it."""
    path = Path(url.removeprefix("sqlite:///"))
    size = path.stat().st_size
    noise = random.Random(15)
    with path.open("r+b") as stream:
        for page in range(1, size // 4096):
            stream.seek(page * 4096)
            stream.write(bytes(noise.getrandbits(8) for _ in range(4096)))
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["jobs"],
        ["enqueue", "nightly_report", "--sheets", str(SHEETS)],
    ],
)
def test_a_corrupted_sqlite_file_says_so_and_how_to_recover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path = _corrupt(_sqlite(tmp_path))
    capsys.readouterr()
    assert main([*argv, "--db", f"sqlite:///{path}"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "is corrupted" in line
    assert f'sqlite3 {path} ".recover"' in line


@pytest.mark.slow
def test_a_worker_on_a_corrupted_sqlite_file_says_so_and_stops(tmp_path: Path) -> None:
    path = _corrupt(_sqlite(tmp_path))
    env = {**os.environ, "OPS_CHAT_WEBHOOK_URL": "http://127.0.0.1:9/hook"}
    argv = ["worker", "--sheets", str(SHEETS), "--db", f"sqlite:///{path}"]
    result = subprocess.run(
        [sys.executable, "-m", "jobdef", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2
    line = _one_line(result.stdout + result.stderr)
    assert "is corrupted" in line
    assert ".recover" in line


@pytest.mark.parametrize("command", [["status"], ["db", "upgrade"], ["jobs"], ["cancel", "1"]])
def test_a_database_url_that_does_not_parse_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    assert main([*command, "--db", "postgresql://u:Hunter2pw@[::1/db"]) == 2
    output = capsys.readouterr()
    line = _one_line(output.out + output.err)
    assert "not a valid URL" in line
    assert "Hunter2pw" not in output.out + output.err


def test_a_schema_name_with_a_trailing_line_break_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = POSTGRES_URL + "?schema=jobdef_issue%0A"
    assert main(["db", "upgrade", "--db", url]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "is not usable" in line
