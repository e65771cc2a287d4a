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


def test_postgres_counts_queued_and_running_jobs_per_name(
    tmp_path: Path, postgres_url: str, postgres_schema: str
) -> None:
    sheets = write_project(tmp_path)
    url = f"{postgres_url}?schema={postgres_schema}"
    _fill(url, sheets)
    assert active_jobs(url) == {"send_receipt": 3, "ship_order": 1}


FIRST_RUN_HANDLERS = """\
from jobdef import first_run


def send_receipt(ctx, order_id):
    with ctx.connection() as conn:
        if not first_run(ctx, conn):
            return


def ship_order(ctx, order_id):
    pass
"""


def test_a_changed_recipe_says_what_it_does_to_dedupe_windows_and_processed_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobdef.backends import open_backend
    from jobdef.backends.records import ClaimOptions
    from jobdef.cli import main
    from support.sheet_repo import edit

    old = write_project(tmp_path / "old")
    edit(
        old / "send_receipt.yaml",
        'idempotency: {key: "order-{order_id}"}',
        'idempotency: {key: "order-{order_id}", dedupe_window: 1d}',
    )
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("", "utf-8")
    (tmp_path / "app" / "jobs.py").write_text(FIRST_RUN_HANDLERS, "utf-8")
    new = write_project(tmp_path / "new")
    for name in ("send_receipt", "ship_order", "charge_card"):
        edit(new / f"{name}.yaml", '"order-{order_id}"', '"order:{order_id}"')
    edit(
        new / "send_receipt.yaml",
        'idempotency: {key: "order:{order_id}"}',
        'idempotency: {key: "order:{order_id}", dedupe_window: 1d}',
    )
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    _fill(url, old)
    backend = open_backend(url)
    try:  # two of the three send_receipt jobs done (just now: inside the window)
        claimed = backend.claim(ClaimOptions("w1", lease_seconds=60, limit=2))
        assert {r.job for r in claimed} <= {"send_receipt", "ship_order"}
        backend.complete([r.lease for r in claimed])
        done = sum(1 for r in claimed if r.job == "send_receipt")
    finally:
        backend.close()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JOBDEF_PYTHONPATH", str(tmp_path))

    assert main(["diff", str(old), str(new), "--fail-on", "breaking"]) == 1
    text = capsys.readouterr().out
    receipt = next(
        line for line in text.splitlines() if "order-{order_id}" in line and "1d" in line
    )
    assert "jobs finished in the last 1d (the dedupe_window) no longer absorb" in receipt
    assert "the keys the handler recorded with first_run (processed_keys) no longer" in receipt
    assert "in the store" not in receipt  # no --db: no counts

    assert main(["diff", str(old), str(new), "--db", url, "--format", "json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    by_job = {
        job["name"]: next(c for c in job["consequences"] if c["kind"] == "idempotency_recipe")
        for job in data["jobs"]
    }
    receipt_facts = by_job["send_receipt"]["facts"]
    assert by_job["send_receipt"]["severity"] == "breaking"
    assert receipt_facts["dedupe_window"] == 86400
    assert receipt_facts["first_run"] is True
    assert (receipt_facts["done"], receipt_facts["done_in_window"]) == (done, done)
    assert receipt_facts["active"] == 3 - done
    ship = by_job["ship_order"]["facts"]
    assert (ship["first_run"], ship["dedupe_window"]) == (False, None)
    assert "done_in_window" not in ship

    assert main(["diff", str(old), str(new), "--db", url]) == 0
    text = capsys.readouterr().out
    assert f"({done} jobs finished inside it in the store)" in text
    assert f"({done} done jobs with their keys in the store)" in text
    assert main(["diff", str(old), str(new), "--db", url, "--lang", "ja"]) == 0
    ja = capsys.readouterr().out
    assert "dedupe_window（1日）内に完了したジョブ" in ja
    assert "first_run で記録した処理済みキー" in ja
