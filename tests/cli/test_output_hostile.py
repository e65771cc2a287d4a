"""What the CLI prints from args and error messages: escaped, cut to a column, aligned.

Args and error messages come from whoever enqueues a job and from the handler's
exceptions: a terminal must show them, never act on them (ANSI escapes, bidi
overrides), and one huge value must not flood it. Jobs are written to a real
SQLite store and the real commands print them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob, Notification
from jobdef.cli import main
from jobdef.cli.runtime_options import MAX_COLUMN_WIDTH, table
from jobdef.render.escape import display_width

ANSI = "\x1b[2J\x1b[31mowned\x1b[0m"
RLO = "\u202e"
RAW = ("\x1b", RLO, "\x9b", "\x07")


def dead_job(url: str, args: dict[str, object], message: str) -> int:
    backend = open_backend(url)
    try:
        [job] = backend.enqueue([NewJob(job="import_feed", args=args, queue="default")])
        [claimed] = backend.claim(ClaimOptions(worker_id="w1", lease_seconds=60, limit=1))
        assert backend.bury(claimed.lease, ErrorInfo("ValueError", message))
        return job.id
    finally:
        backend.close()


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jobs.db'}"


def test_jobs_and_jobs_show_escape_ansi_and_bidi_in_args_and_errors(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = dead_job(url, {"name": f"{RLO}fdp.exe", "bell": "\x07"}, f"bad row {ANSI}\x9b1m")
    for command in (["jobs"], ["jobs", "show", str(job_id)]):
        assert main([*command, "--db", url]) == 0
        out = capsys.readouterr().out
        assert not any(char in out for char in RAW), command
        assert "\\x1b[31mowned" in out
        assert "\\u202efdp.exe" in out
        assert "\\x9b1m" in out


def test_status_escapes_a_receivers_answer_in_the_outbox_section(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = open_backend(url)
    try:
        backend.enqueue([NewJob(job="import_feed", args={}, queue="default")])
        [claimed] = backend.claim(ClaimOptions(worker_id="w1", lease_seconds=60, limit=1))
        note = Notification(
            channel="ops", event="dead", job="import_feed", payload={}, message_id="m-1"
        )
        assert backend.bury(claimed.lease, ErrorInfo("E", "m"), notifications=[note])
        [row] = backend.outbox_claim(10, 60)
        backend.outbox_failed(row.id, f"webhook answered HTTP 500: {ANSI}{RLO}", 0.0)
    finally:
        backend.close()
    assert main(["status", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "\\x1b[2J" in out
    assert not any(char in out for char in RAW)


@pytest.mark.slow
def test_one_huge_arg_does_not_flood_the_terminal(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = "x" * 100_000_000
    dead_job(url, {"blob": huge}, "too big")
    assert main(["jobs", "--db", url]) == 0
    out = capsys.readouterr().out
    assert len(out) < 2_000
    assert "…" in out
    assert main(["jobs", "--db", url, "--format", "json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["args"]["blob"] == huge  # the full value stays in JSON


def test_table_columns_line_up_with_east_asian_wide_text() -> None:
    rows = [["ID", "ARGS", "STATE"], ["1", "予約メール送信", "dead"], ["2", "mail", "done"]]
    lines = table(rows).splitlines()
    # STATE starts at the same terminal column on every line.
    starts = [
        display_width(line[: line.index(state)])
        for line, state in zip(lines, ["STATE", "dead", "done"], strict=True)
    ]
    assert len(set(starts)) == 1


def test_table_cuts_a_long_cell_by_display_width_with_an_ellipsis() -> None:
    [_, row] = table([["ARGS"], ["日本語" * 100]]).splitlines()
    assert row.endswith("…")
    assert display_width(row) <= MAX_COLUMN_WIDTH
