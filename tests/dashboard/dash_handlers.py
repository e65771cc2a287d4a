"""Handlers the dashboard tests' worker processes run."""

from __future__ import annotations


def ship_order(ctx, order_id: int, note: str = "") -> None:
    pass


def build_report(ctx, report_id: int) -> None:
    pass


def refuse_sign_in(ctx, user: str, password: str, profile: dict) -> None:
    raise PermissionError(f"sign-in of {user} refused by the test")


def quote_order(ctx, order_id: int) -> dict:
    # Markup a page must show as text, and a key whose name says secret.
    return {
        "total": 1000 + order_id,
        "note": "<script>alert('x')</script> & co",
        "api_token": "t0k3n",
    }


def pick_items(ctx, order_id: int) -> None:
    pass


def pack_box(ctx, order_id: int) -> None:
    pass


def ship_box(ctx, order_id: int) -> None:
    pass
