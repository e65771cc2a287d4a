"""The outbox section of ``jobdef status``: backlog and failed deliveries per channel."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from sqlite_outbox import NEW_YEAR_2026, bury_with, dead, open_store

from jobdef.cli import main
from jobdef.notify.status import outbox_lines, outbox_status
from support import ManualClock


def test_status_shows_backlog_and_failed_deliveries_per_channel(tmp_path: Path) -> None:
    clock = ManualClock(NEW_YEAR_2026)
    backend = open_store(tmp_path / "jobs.db", clock)
    try:
        assert outbox_lines(outbox_status(backend, clock())) == [
            "outbox: empty (every notification delivered)"
        ]
        bury_with(backend, [dead(1), dead(2), dead(3, "ops-log")])
        [first, *_] = backend.outbox_claim(1, 60)
        backend.outbox_failed(
            first.id, "webhook answered HTTP 503 Service Unavailable", clock() + 30
        )
        clock.advance(125)

        status = outbox_status(backend, clock())
        assert (status.waiting, status.failing) == (3, 1)
        assert outbox_lines(status) == [
            "outbox: 3 waiting, 1 with failed deliveries",
            "  ops: 2 waiting (oldest 2m5s), 1 failing, next try in 0s; "
            "last error: webhook answered HTTP 503 Service Unavailable",
            "  ops-log: 1 waiting (oldest 2m5s)",
        ]
        assert status.as_json()["channels"][0]["failing"] == 1
    finally:
        backend.close()


def test_jobdef_status_prints_the_outbox_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = open_store(tmp_path / "jobs.db")
    try:
        bury_with(backend, [dead(1), dead(2)])
        [first, *_] = backend.outbox_claim(1, 60)
        backend.outbox_failed(first.id, "webhook unreachable: Connection refused", time.time())
    finally:
        backend.close()
    url = f"sqlite:///{tmp_path / 'jobs.db'}"

    assert main(["status", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "outbox: 2 waiting, 1 with failed deliveries" in out
    assert "last error: webhook unreachable: Connection refused" in out

    assert main(["status", "--db", url, "--format", "json"]) == 0
    outbox = json.loads(capsys.readouterr().out)["outbox"]
    assert (outbox["waiting"], outbox["failing"]) == (2, 1)
    assert outbox["channels"][0]["last_error"] == "webhook unreachable: Connection refused"
