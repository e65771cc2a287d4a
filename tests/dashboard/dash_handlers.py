"""Handlers the dashboard tests' worker processes run."""

from __future__ import annotations


def ship_order(ctx, order_id: int, note: str = "") -> None:
    pass


def build_report(ctx, report_id: int) -> None:
    pass


def refuse_sign_in(ctx, user: str, password: str, profile: dict) -> None:
    raise PermissionError(f"sign-in of {user} refused by the test")
