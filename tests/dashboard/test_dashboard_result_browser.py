"""A done job's page in a real headless Chromium shows what its sheet's ``result:`` kept:
the value (escaped, secrets masked), its size as stored and when it expires, or that the
sheet stores none. The jobs run in a real worker process, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import expect

from jobdef.dashboard import create_app
from jobdef.runtime import connect
from jobdef.sheets.pipeline import load_registry
from support.workers import Processes, worker_command

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "result_sheets"


def test_a_done_jobs_page_shows_its_stored_result_or_why_there_is_none(
    page, serve, store_url: str, tmp_path: Path
) -> None:
    with connect(store_url, load_registry([SHEETS])) as queue:
        kept = queue.enqueue("quote_order", {"order_id": 7}).job_id
        dropped = queue.enqueue("warm_cache", {"order_id": 8}).job_id
    processes = Processes(tmp_path, importable=(HERE,))
    try:
        worker = processes.start("w", worker_command(store_url, SHEETS, "--burst"))
        assert worker.process.wait(120) == 0, processes.log("w")
    finally:
        processes.close()
    with connect(store_url, load_registry([SHEETS])) as queue:
        record = queue.get(kept)
    assert record is not None
    assert record.state == "done"
    assert record.finished_at is not None
    dashboard = serve(create_app(store_url, SHEETS, poll_seconds=0.2))

    page.goto(f"{dashboard.url}/jobs/{kept}")
    shown = page.locator("#result")
    expect(shown).to_contain_text('"note": "<script>alert(\'x\')</script> & co"')
    expect(shown).to_contain_text('"api_token": "***"')
    expect(shown).to_contain_text('"total": 1007')
    assert page.locator("#result script").count() == 0  # text, not markup
    assert "t0k3n" not in page.content()
    stored = json.dumps(record.result, ensure_ascii=False, separators=(",", ":"))
    expect(page.locator("#result-size")).to_have_text(f"{len(stored.encode())} bytes")
    ends = datetime.fromtimestamp(record.finished_at + 1800, UTC)
    expect(page.locator("#result-expiry")).to_have_text(
        f"expires {ends:%Y-%m-%d %H:%M:%S} UTC (result.retention: 30m)"
    )

    page.goto(f"{dashboard.url}/jobs/{dropped}")
    expect(page.locator("#result-none")).to_have_text("not stored (result.store: false)")
    assert page.locator("#result").count() == 0
