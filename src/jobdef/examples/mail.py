"""``send_reservation_mail``: write the confirmation mail of a reservation to the mail spool.

The relay is a folder (``<data_dir>/outbox-mail``): each mail is one ``.eml``
file named by the idempotency key, so a second run overwrites the same file
instead of sending twice. ``$JOBDEF_DEMO_MAIL_FAILURES=N`` makes the relay
refuse the first N attempts with a ConnectionError, which the sheet retries.
"""

from __future__ import annotations

import os
from email.message import EmailMessage

from jobdef.examples import data_dir
from jobdef.examples.errors import Cancelled, InvalidAddress
from jobdef.runtime.context import Context

# Reservation ids the demo treats as special.
CANCELLED = {13}
NO_ADDRESS = {404}


def recipient(reservation_id: int) -> str:
    if reservation_id in NO_ADDRESS:
        raise InvalidAddress(f"reservation {reservation_id} has no valid mail address")
    return f"guest-{reservation_id}@example.com"


def send_reservation_mail(ctx: Context, reservation_id: int) -> None:
    failures = int(os.environ.get("JOBDEF_DEMO_MAIL_FAILURES", "0"))
    if ctx.attempt <= failures:
        raise ConnectionError(f"SMTP relay refused the connection (attempt {ctx.attempt})")
    if reservation_id in CANCELLED:
        raise Cancelled(f"reservation {reservation_id} was cancelled")
    message = EmailMessage()
    message["From"] = "reservations@example.com"
    message["To"] = recipient(reservation_id)
    message["Subject"] = f"予約確定のお知らせ (#{reservation_id})"
    message.set_content(f"ご予約 #{reservation_id} が確定しました。\n")
    spool = data_dir() / "outbox-mail"
    spool.mkdir(exist_ok=True)
    name = (ctx.idempotency_key or str(ctx.job_id)).replace(":", "_")
    (spool / f"{name}.eml").write_bytes(bytes(message))
    ctx.logger.info("mail for reservation %s written", reservation_id)
