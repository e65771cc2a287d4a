"""The ``slack`` channel: a Slack message, posted to an incoming webhook read from the environment.

The event's one-line summary is the message's header and the text Slack shows in
its notification; the event's text follows in ``mrkdwn`` sections, with the
three characters Slack reads as markup escaped, so that an error message can
neither mention ``@channel`` nor forge a link. Slack takes at most 3000
characters a section: a longer text (a digest) is cut into sections at line ends.
Delivery is the webhook channel's: one POST that carries ``X-Jobdef-Message-Id``,
TLS verified, no redirect followed, the timeout bounding the whole delivery, and
the URL (whose path is the secret) never shown past its origin.
"""

from __future__ import annotations

from typing import Any

from jobdef.notify.channels.webhook import WebhookSender, slack_escape
from jobdef.notify.message import Message
from jobdef.policy.channels import SlackSettings

# Slack's limits: the text of a header, the text of a section, the blocks of a message.
HEADER_CHARS = 150
SECTION_CHARS = 3000
MAX_BLOCKS = 50


def _cut(text: str, limit: int) -> int:
    """Where to cut escaped ``text`` at most ``limit`` characters in: not inside ``&amp;``."""
    amp = text.rfind("&", max(limit - 4, 0), limit)
    return amp if amp > 0 and ";" not in text[amp:limit] else limit


def sections(text: str, limit: int = SECTION_CHARS) -> list[str]:
    """``text`` escaped for ``mrkdwn``, in pieces of at most ``limit`` characters, each
    ending at a line end unless one line alone is longer."""
    pieces: list[str] = []
    piece = ""
    for raw in text.splitlines(keepends=True):
        line = slack_escape(raw)
        while len(piece) + len(line) > limit:
            if piece:
                pieces.append(piece)
                piece = ""
                continue
            cut = _cut(line, limit)
            pieces.append(line[:cut])
            line = line[cut:]
        piece += line
    pieces.append(piece)
    return [p.strip("\n") for p in pieces if p.strip()]


class SlackSender(WebhookSender):
    """POSTs each message as a Slack message: a header, then the text in sections."""

    def body(self, message: Message) -> dict[str, Any]:
        lines = message.text.strip().splitlines()
        if lines and lines[0].strip() == message.subject:
            lines = lines[1:]  # the built-in text begins with what the header says
        texts = sections("\n".join(lines))
        if len(texts) > MAX_BLOCKS - 1:
            left_out = len(texts) - (MAX_BLOCKS - 2)
            texts = [*texts[: MAX_BLOCKS - 2], f"… and {left_out} more sections"]
        header = message.subject[:HEADER_CHARS]
        return {
            "text": slack_escape(message.subject),
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": header}},
                *({"type": "section", "text": {"type": "mrkdwn", "text": t}} for t in texts),
            ],
        }


def build(settings: SlackSettings) -> SlackSender:
    return SlackSender(settings.url, timeout=settings.timeout)
