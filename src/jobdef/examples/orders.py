"""The jobs of the ``order_placed`` example workflow: charge, receipt, ledger.

An order is charged, then a receipt is mailed and points are awarded
(:mod:`jobdef.examples.points`), and the ledger is posted once both are done.
Charges and ledger entries live in a SQLite file (``<data_dir>/orders.db``), each
written with its processed key in one transaction (:func:`jobdef.runtime.first_run`),
so a second run of a step changes nothing. The receipt is an ``.eml`` file.
"""

from __future__ import annotations

import sqlite3
from email.message import EmailMessage

from jobdef.examples import data_dir
from jobdef.examples.errors import CardDeclined
from jobdef.runtime.context import Context
from jobdef.runtime.idempotency import first_run

# Orders whose card the example issuer declines (an order id is what the demo varies).
DECLINED_ORDERS = {13}


def orders_db() -> sqlite3.Connection:
    conn = sqlite3.connect(data_dir() / "orders.db", timeout=30)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS charges (order_id INTEGER PRIMARY KEY, charge_id TEXT, "
        "amount INTEGER)"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS ledger (order_id INTEGER PRIMARY KEY, charge_id TEXT)")
    return conn


def charge_order(ctx: Context, order_id: int, amount: int) -> dict[str, object]:
    """Charge the order's card once; the result names the charge for the later steps."""
    if order_id in DECLINED_ORDERS:
        raise CardDeclined(f"the card of order {order_id} was declined")
    charge_id = f"ch-{order_id:08d}"
    conn = orders_db()
    try:
        with conn:
            if first_run(ctx, conn):
                conn.execute(
                    "INSERT OR IGNORE INTO charges VALUES (?, ?, ?)", (order_id, charge_id, amount)
                )
    finally:
        conn.close()
    return {"charge_id": charge_id, "amount": amount}


def send_receipt_mail(ctx: Context, order_id: int, charge_id: str) -> None:
    """Write the receipt as an .eml file (the example's outbox)."""
    message = EmailMessage()
    message["To"] = f"order-{order_id}@example.com"
    message["Subject"] = f"Receipt for order {order_id}"
    message.set_content(f"Your order {order_id} was charged ({charge_id}).")
    outbox = data_dir() / "receipts"
    outbox.mkdir(exist_ok=True)
    (outbox / f"{order_id}.eml").write_bytes(bytes(message))


def post_ledger(ctx: Context, order_id: int, charge_id: str) -> None:
    """Post the charge to the ledger, once."""
    conn = orders_db()
    try:
        with conn:
            if first_run(ctx, conn):
                conn.execute("INSERT OR IGNORE INTO ledger VALUES (?, ?)", (order_id, charge_id))
    finally:
        conn.close()
