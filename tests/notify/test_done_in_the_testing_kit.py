"""The testing kit's drain writes the done notification as the worker does: the job's
receipt, and only the result fields the sheet's ``result.notify`` names."""

from __future__ import annotations

from pathlib import Path

import pytest

SHEETS = Path(__file__).resolve().parent / "done_sheets"

pytestmark = pytest.mark.jobdef(sheets=str(SHEETS), start=1_800_000_000)


def test_the_kits_done_notification_holds_the_receipt_and_the_named_fields(jobdef_queue):
    receipt = jobdef_queue.enqueue("price_order_hooked", {"order_id": 5})
    jobdef_queue.drain()
    note = jobdef_queue.assert_notified("shop-hook", "done", "price_order_hooked")
    assert note.payload["receipt"] == str(receipt)
    assert note.payload["result"] == {"total": 1205, "currency": "JPY"}
