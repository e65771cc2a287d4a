"""A ``done`` notification carries the job's receipt and the fields of its stored result
that the sheet's ``result.notify`` names, and nothing else of the result: on a real
webhook server on loopback and on the log channel, from a real ``jobdef worker``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from notify_servers import WebhookServer

from jobdef.backends import open_backend
from jobdef.backends.records import JobRecord
from jobdef.notify.events import notifications_for
from jobdef.notify.render import Renderer, event_line
from jobdef.redact import MASK
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support.stores import ENGINES, engine_db_url
from support.workers import Processes, worker_command

HERE = Path(__file__).resolve().parent
HOOK_ENV = "DONE_HOOK_URL"
PAGE = HERE.parents[1] / "docs" / "notifications.md"
AT = 1_767_225_600.0

# The webhook's variable is DONE_HOOK_URL; the testing kit's test reads the same sheets.
SHEETS = (HERE / "done_sheets" / "jobs.yaml").read_text("utf-8")


def _same_run(line: str) -> str:
    """``line`` without what differs from run to run: the time, the token, the message id's."""
    line = re.sub(r"receipt: [A-Za-z0-9_-]+", "receipt: TOKEN", line)
    line = re.sub(r"when: \S+", "when: WHEN", line)
    return re.sub(r":done:\d+", ":done:N", line)


def _sheets(tmp_path: Path, text: str = SHEETS) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir(exist_ok=True)
    (folder / "jobs.yaml").write_text(text, "utf-8")
    return folder


def _record(job: str, receipt: str | None = "tok-123") -> JobRecord:
    return JobRecord(
        id=7,
        job=job,
        queue="default",
        priority=0,
        args={"order_id": 5},
        state="running",
        attempt=1,
        max_attempts=1,
        idempotency_key=None,
        run_after=AT,
        created_at=AT,
        updated_at=AT,
        receipt=receipt,
    )


def _done(tmp_path: Path, job: str, value: Any, text: str = SHEETS) -> dict[str, Any]:
    policy = load_registry([_sheets(tmp_path, text)]).job(job)
    stored = None if value is None else json.dumps(value)
    [note] = notifications_for(policy, "done", _record(job), None, AT, result=stored)
    return note.payload


def test_the_done_payload_holds_the_receipt_and_only_the_named_fields(tmp_path: Path) -> None:
    value = {"total": 1205, "currency": "JPY", "card_last4": "4242", "lines": [1]}
    payload = _done(tmp_path, "price_order_hooked", value)
    assert payload["receipt"] == "tok-123"
    assert payload["result"] == {"total": 1205, "currency": "JPY"}
    assert "4242" not in json.dumps(payload)


def test_without_result_notify_the_payload_has_the_receipt_and_no_result(
    tmp_path: Path,
) -> None:
    payload = _done(tmp_path, "price_order_plain", {"total": 1, "currency": "JPY"})
    assert payload["receipt"] == "tok-123"
    assert "result" not in payload


def test_a_value_without_the_fields_or_not_an_object_gives_no_fields(tmp_path: Path) -> None:
    assert _done(tmp_path, "price_order_hooked", {"other": 1})["result"] == {}
    assert _done(tmp_path, "price_order_hooked", [1, 2])["result"] == {}
    assert _done(tmp_path, "price_order_hooked", None)["result"] == {}


def test_only_done_carries_the_receipt(tmp_path: Path) -> None:
    text = SHEETS.replace("events: [done]}\nresult:", "events: [done, dead]}\nresult:", 1)
    policy = load_registry([_sheets(tmp_path, text)]).job("price_order_hooked")
    [note] = notifications_for(policy, "dead", _record("price_order_hooked"), None, AT)
    assert "receipt" not in note.payload
    assert "result" not in note.payload


def test_a_secret_in_a_named_field_is_shown_as_args_are(tmp_path: Path) -> None:
    text = SHEETS.replace("notify: [total, currency]", "notify: [total, link, api_token]", 1)
    value = {
        "total": {"amount": 5, "password": "hunter22"},
        "link": "https://shop:pa55word@example.test/r/1",
        "api_token": "tok-secret-value",
    }
    payload = _done(tmp_path, "price_order_hooked", value, text)
    assert payload["result"] == {
        "total": {"amount": 5, "password": MASK},
        "link": f"https://shop:{MASK}@example.test/r/1",
        "api_token": MASK,
    }
    flat = json.dumps(payload)
    for secret in ("hunter22", "pa55word", "tok-secret"):
        assert secret not in flat


def test_the_text_of_every_channel_says_the_receipt_and_the_fields(tmp_path: Path) -> None:
    item = {
        "message_id": "m1",
        **_done(tmp_path, "price_order_hooked", {"total": 9, "currency": "JPY"}),
    }
    text = Renderer().event_text(item)
    assert "result: total=9, currency=JPY\n" in text
    assert "receipt: tok-123\n" in text
    line = event_line(item)
    assert " result: total=9, currency=JPY receipt: tok-123 " in line
    empty = {"message_id": "m2", **_done(tmp_path, "price_order_hooked", {"other": 1})}
    assert "result: (the value has none of the fields" in Renderer().event_text(empty)


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return engine_db_url(request, tmp_path)


def _run_burst(
    tmp_path: Path, url: str, jobs: dict[str, int], env: dict[str, str]
) -> tuple[dict, str]:
    """Enqueue each job of ``jobs`` (name: order id) in the store at ``url``, run ``jobdef
    worker --burst`` with JSON log lines; the receipts by job, and the worker's log."""
    sheets = _sheets(tmp_path)
    backend = open_backend(url)
    try:
        queue = Queue(backend, load_registry([sheets]))
        receipts = {job: queue.enqueue(job, {"order_id": n}) for job, n in jobs.items()}
    finally:
        backend.close()
    processes = Processes(tmp_path, importable=(HERE,), env=env)
    try:
        command = worker_command(url, sheets, "--burst", "--log-format", "json")
        worker = processes.start("w", command)
        assert worker.process.wait(60) == 0, processes.log("w")
        return receipts, processes.log("w")
    finally:
        processes.close()


@pytest.mark.slow
def test_a_real_worker_posts_the_receipt_and_the_named_fields_to_a_webhook(
    tmp_path: Path, store_url: str, webhook: WebhookServer
) -> None:
    receipts, _ = _run_burst(
        tmp_path,
        store_url,
        {"price_order_hooked": 5, "price_order_plain": 6},
        {HOOK_ENV: webhook.url},
    )
    bodies = {r.body["job"]: r.body for r in webhook.received}
    assert set(bodies) == {"price_order_hooked", "price_order_plain"}
    named = bodies["price_order_hooked"]
    assert named["event"] == "done"
    assert named["receipt"] == str(receipts["price_order_hooked"])
    assert len(named["receipt"]) >= 22  # the token, not the sequential id
    assert named["result"] == {"total": 1205, "currency": "JPY"}
    assert f"receipt: {receipts['price_order_hooked']}" in named["text"]
    raw = json.dumps(named)
    assert "4242" not in raw  # nothing else of the result
    assert "A-1" not in raw
    plain = bodies["price_order_plain"]
    assert plain["receipt"] == str(receipts["price_order_plain"])
    assert "result" not in plain
    assert "4242" not in json.dumps(plain)


@pytest.mark.slow
def test_a_real_worker_logs_the_receipt_and_the_named_fields_on_the_log_channel(
    tmp_path: Path, store_url: str
) -> None:
    # The webhook channel must be configured for the worker to start; it gets nothing.
    unused = {HOOK_ENV: "http://127.0.0.1:9/unused"}
    receipts, log = _run_burst(tmp_path, store_url, {"price_order": 5}, unused)
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    [done] = [line for line in lines if line["logger"] == "jobdef.notify"]
    token = str(receipts["price_order"])
    assert (done["event"], done["job"], done["level"]) == ("done", "price_order", "info")
    assert done["receipt"] == token
    # A log line's extras are flat: a mapping travels as its JSON text.
    assert json.loads(done["result"]) == {"total": 1205, "currency": "JPY"}
    assert " | result: total=1205, currency=JPY | receipt: " + token in done["message"]
    # The line docs/notifications.md shows, but for the token and the times.
    [shown] = [
        text for text in PAGE.read_text("utf-8").splitlines() if " jobdef.notify INFO " in text
    ]
    assert _same_run(done["message"].replace(token, "TOKEN")) in _same_run(shown)
    assert "4242" not in log
    assert "A-1" not in log
