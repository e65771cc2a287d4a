"""The ``email`` channel: a plain-text mail through SMTP.

``security`` is ``starttls`` (default, port 587), ``tls`` (port 465) or
``none`` (port 25); certificates are verified for both TLS modes. The user and
password come from the environment variables ``user_env``/``password_env``
name. The mail's ``Message-ID`` is derived from the outbox message id, so a
copy resent after a crash is recognisable (and dropped by many mail stores).
The channel's ``timeout`` bounds the whole delivery, not each read.
"""

from __future__ import annotations

import re
import smtplib
import socket
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

from jobdef.errors import DeliveryError
from jobdef.notify.deadline import Deadline
from jobdef.notify.message import Message
from jobdef.policy.channels import MailSettings
from jobdef.redact import redact


def mail_message_id(message_id: str) -> str:
    """An RFC 5322 Message-ID made from the outbox message id (same id, same header)."""
    local = re.sub(r"[^A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]", "-", message_id).strip(".") or "message"
    return f"<{local}@jobdef.invalid>"


class MailSender:
    """Sends each message as one plain-text mail."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        sender: str,
        recipients: Sequence[str],
        security: str = "starttls",
        user: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.host = host
        self.port = port
        self.sender = sender
        self.recipients = list(recipients)
        self.security = security
        self.user = user
        self.password = password
        self.timeout = timeout

    def compose(self, message: Message) -> EmailMessage:
        mail = EmailMessage()
        mail["Subject"] = message.subject
        mail["From"] = self.sender
        mail["To"] = ", ".join(self.recipients)
        mail["Date"] = formatdate(usegmt=True)
        mail["Message-ID"] = mail_message_id(message.message_id)
        mail["X-Jobdef-Message-Id"] = message.message_id
        mail.set_content(message.text)
        return mail

    def _connect(self, deadline: Deadline) -> smtplib.SMTP:
        if self.security == "tls":
            client: smtplib.SMTP = _watched(smtplib.SMTP_SSL, deadline)(
                self.host, self.port, timeout=self.timeout, context=ssl.create_default_context()
            )
            return client
        smtp: smtplib.SMTP = _watched(smtplib.SMTP, deadline)(
            self.host, self.port, timeout=self.timeout
        )
        if self.security == "starttls":
            smtp.starttls(context=ssl.create_default_context())
        return smtp

    def send(self, message: Message) -> None:
        where = f"SMTP {self.host}:{self.port}"
        with Deadline(self.timeout) as deadline:
            try:
                with self._connect(deadline) as smtp:
                    if self.user:
                        smtp.login(self.user, self.password or "")
                    smtp.send_message(self.compose(message))
                if deadline.expired:  # cut short: the answers read may be truncated ones
                    raise TimeoutError
            except Exception as exc:
                if deadline.expired:
                    text = (
                        f"{where} did not answer within the channel timeout of "
                        f"{self.timeout:g}s (connect, send and read together)"
                    )
                elif isinstance(exc, smtplib.SMTPException):
                    text = f"{where}: {exc}"
                elif isinstance(exc, OSError):
                    text = f"{where} unreachable: {type(exc).__name__}: {exc}"
                else:
                    text = f"{where}: {type(exc).__name__}: {exc}"
                raise DeliveryError(redact(text, [self.password or ""])) from None


def _watched(base: type[smtplib.SMTP], deadline: Deadline) -> Any:
    """``base`` whose socket ``deadline`` shuts down when it passes; connecting takes what
    is left of the deadline."""

    class Client(base):  # type: ignore[valid-type,misc]
        def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
            sock: socket.socket = super()._get_socket(
                host, port, min(timeout, deadline.remaining())
            )
            deadline.watch(sock)
            return sock

    return Client


def build(settings: MailSettings) -> MailSender:
    return MailSender(
        host=settings.host,
        port=settings.port,
        sender=settings.sender,
        recipients=settings.recipients,
        security=settings.security,
        user=settings.user,
        password=settings.password,
        timeout=settings.timeout,
    )
