"""Handlers the dashboard tests' worker processes run."""

from __future__ import annotations


def ship_order(ctx, order_id: int, note: str = "") -> None:
    pass


def build_report(ctx, report_id: int) -> None:
    pass
