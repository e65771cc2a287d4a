"""Handlers for the end-to-end notification tests (imported by the worker's children)."""

from __future__ import annotations

from typing import Any


def refuse(ctx: Any, n: int) -> None:
    raise PermissionError(f"job {n}: access denied by the test")


def refuse_sign_in(ctx: Any, user: str, password: str) -> None:
    # A handler that quotes what it was given, as handlers do.
    raise PermissionError(f"sign-in of {user} with {password} refused by the test")


def no_address(ctx: Any, invoice_id: int) -> None:
    raise LookupError(f"invoice {invoice_id} has no customer address")


def price(ctx: Any, order_id: int) -> dict[str, Any]:
    # More than the sheet's result.notify names: only total and currency may travel.
    return {
        "total": 1200 + order_id,
        "currency": "JPY",
        "card_last4": "4242",
        "lines": [{"sku": "A-1", "qty": 2}],
    }
