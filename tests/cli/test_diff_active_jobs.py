"""`jobdef diff --db`: the counts of queued and running jobs, read from a real job store."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.cli.active_jobs import active_jobs
from jobdef.runtime import connect
from jobdef.sheets.pipeline import load_registry
from support.sheet_repo import write_project


def _fill(url: str, sheets: Path) -> None:
    """Three send_receipt jobs and one ship_order job queued, one charge_card job cancelled."""
    queue = connect(url, load_registry([sheets]))
    try:
        for order_id in (1, 2, 3):
            queue.enqueue("send_receipt", {"order_id": order_id})
        queue.enqueue("ship_order", {"order_id": 1})
        done = queue.enqueue("charge_card", {"order_id": 9})
        queue.backend.cancel(done.id)
    finally:
        queue.close()


def test_sqlite_counts_queued_and_running_jobs_per_name(tmp_path: Path) -> None:
    sheets = write_project(tmp_path)
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    _fill(url, sheets)
    assert active_jobs(url) == {"send_receipt": 3, "ship_order": 1}


@pytest.mark.postgres
def test_postgres_counts_queued_and_running_jobs_per_name(
    tmp_path: Path, postgres_url: str, postgres_schema: str
) -> None:
    sheets = write_project(tmp_path)
    url = f"{postgres_url}?schema={postgres_schema}"
    _fill(url, sheets)
    assert active_jobs(url) == {"send_receipt": 3, "ship_order": 1}
