"""The ``log`` channel: one log line per event, in words, on logger ``jobdef.notify``.

The line is the event's text on one line, its parts joined by `` | ``
(``[jobdef] dead: send_invoice (Send invoice), job 2 | attempts: 5 of 5 | last
error: ... | re-run: jobdef requeue 2 ...``), or the channel's ``template``
likewise. The event's fields travel as the record's extras: with the worker's
``--log-format json`` they are fields of the JSON line (``event``, ``job``,
``job_id``, ``message_id``...), which a log pipeline can parse and alert on; a
text line adds only ``queue=`` and ``channel=``, since its words say the rest. A digest is
logged as one line per event, each with its own message id. Dead jobs log at
WARNING, other events at INFO.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from jobdef.notify.message import Message
from jobdef.notify.render import event_line
from jobdef.policy.channels import LogSettings

LOGGER = logging.getLogger("jobdef.notify")

# What joins the lines of an event's text on the one log line.
JOIN = " | "
# Fields of an event that its text says already, or that only repeat another field.
_SAID = frozenset(
    {"text", "title", "at", "at_iso", "rerun", "requeue_command", "error_message", "key_args"}
)
# Fields a text line shows beside its words.
_SHOWN = frozenset({"channel", "queue"})
# Names a log record holds itself: an extra of one of these names would replace it.
_RECORD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class LogSender:
    """Writes each event of a message as one log line in words."""

    def __init__(self, channel: str, logger: logging.Logger = LOGGER) -> None:
        self.channel = channel
        self.logger = logger

    def send(self, message: Message) -> None:
        if message.digest:
            for item in message.items:
                self._log(item, event_line(item))
        else:
            self._log(message.items[0], message.text)

    def _log(self, item: Mapping[str, Any], text: str) -> None:
        line = JOIN.join(part.strip() for part in text.splitlines() if part.strip())
        fields = {
            name: value
            for name, value in item.items()
            if name not in _SAID and name not in _RECORD and not name.startswith("_")
        }
        fields["channel"] = self.channel
        self.logger.log(
            logging.WARNING if item.get("event") == "dead" else logging.INFO,
            "%s",
            line,
            extra={**fields, "_in_text": frozenset(fields) - _SHOWN},
        )


def build(settings: LogSettings) -> LogSender:
    return LogSender(settings.channel)
