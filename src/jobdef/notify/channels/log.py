"""The ``log`` channel: one structured log line per message (the default for local runs).

The line is the message's JSON document on logger ``jobdef.notify``: a log
pipeline can parse it and alert on ``event``. Dead jobs log at WARNING, other
events at INFO.
"""

from __future__ import annotations

import json
import logging

from jobdef.notify.message import Message
from jobdef.policy.channels import LogSettings

LOGGER = logging.getLogger("jobdef.notify")


class LogSender:
    """Writes each message as one JSON log line."""

    def __init__(self, channel: str, logger: logging.Logger = LOGGER) -> None:
        self.channel = channel
        self.logger = logger

    def send(self, message: Message) -> None:
        dead = any(item.get("event") == "dead" for item in message.items)
        line = json.dumps(message.as_json(), ensure_ascii=False, sort_keys=True, default=str)
        self.logger.log(
            logging.WARNING if dead else logging.INFO,
            "%s",
            line,
            extra={"jobdef_channel": self.channel, "jobdef_message_id": message.message_id},
        )


def build(settings: LogSettings) -> LogSender:
    return LogSender(settings.channel)
